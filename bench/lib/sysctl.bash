# bench/lib/sysctl.bash - the machine's sysctls a bash benchmark sets for
# itself and puts back at exit (bench/fwd.sh, bench/loop.sh): sourced, with
# SYSCTL_WHO the benchmark's name for its messages.
#   need_sysctl KEY VALUE  set it, remembering the old value; or return 1
#                          with the reason in SYSCTL_WHY (not in a
#                          subshell: SYSCTL_OLD must survive)
#   restore_sysctls        put back every value need_sysctl changed, or say
#                          that the kernel refused
declare -A SYSCTL_OLD
need_sysctl() {
	local key=$1 val=$2 old err
	SYSCTL_WHY=
	old=$(sysctl -n "$key" 2>&1) || { SYSCTL_WHY="no sysctl $key"; return 1; }
	[ "$old" = "$val" ] && return 0
	err=$(sysctl -qw "$key=$val" 2>&1) ||
		{ SYSCTL_WHY="cannot set $key=$val: $err"; return 1; }
	SYSCTL_OLD[$key]=$old
	echo "$SYSCTL_WHO: $key=$val for the kernel path (it was $old)" >&2
}
restore_sysctls() {
	local key
	for key in "${!SYSCTL_OLD[@]}"; do
		sysctl -qw "$key=${SYSCTL_OLD[$key]}" 2>/dev/null ||
			echo "$SYSCTL_WHO: $key stays $(sysctl -n "$key"): the kernel does" \
			    "not turn it back to ${SYSCTL_OLD[$key]} (until a reboot)" >&2
	done
}
