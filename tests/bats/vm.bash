# A small VM running Debian 12's own kernel as a router between a test's
# namespaces (load after helper and fwd_net).  For what the host kernel
# cannot do: this machine's has no MPLS routing (no CONFIG_MPLS_ROUTING,
# no modules), Debian's has mpls_router and mpls_iptunnel as modules.
#
#   VM_NICS="r0=$NI:i1 r1=$NE:e1"   # guest name = namespace:host tap
#   VM_DUMP="r0"                     # optional: NICs qemu captures
#   vm_start NS SCRIPT               # qemu in NS; SCRIPT: guest commands
#   ... the test's side of the taps ...
#   vm_wait                          # the guest's ready line
#
# Each NIC is a virtio-net on a tap created in NS (qemu's namespace) and,
# once qemu holds it, moved to its own namespace under its host name, so
# that the host side looks like the veth it stands in for.  The guest's
# /init loads the modules, renames the NICs by MAC, brings them up, turns
# on IPv4 forwarding and MPLS (platform_labels, input on every NIC), runs
# SCRIPT with sh -e (addresses, routes), and prints "cats-vm: ready" on
# the serial console ($FWD_DIR/vm.console), which vm_wait waits for while
# the console grows (a boot under TCG takes its time, a stuck one fails).
# qemu is a bg daemon of fwd_net's: fwd_down stops it by pid.  qemu
# writes what passes a NIC of VM_DUMP, both ways, to
# $FWD_DIR/core_vm_<guest>.pcap as it goes: a tcpdump on the host tap
# misses what cats-fwd sends (PACKET_QDISC_BYPASS skips the taps).
#
# The kernel: the linux-image-*-amd64 package linux-image-amd64 depends on,
# fetched once per machine with apt-get download (not installed), its
# vmlinuz and the modules needed kept in $VM_CACHE/<package>; the initramfs
# (busybox-static, iproute2's ip with its libraries, the modules, /init)
# is built there once per version of this file.

VM_CACHE=${VM_CACHE:-/var/cache/cats-test}
# Modules to load, in order once their dependencies are added (modinfo).
VM_MODULES="virtio_pci virtio_net mpls_router mpls_iptunnel"

# The guest's /init (busybox sh).
vm_init() {
	cat <<-'EOF'
	#!/bin/sh
	export PATH=/bin
	ip() { /usr/sbin/ip "$@"; }
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	echo "cats-vm: init"
	for m in $(cat /mod/order); do
		insmod "/mod/$m.ko" || echo "cats-vm: insmod $m failed"
	done
	echo "cats-vm: modules loaded"
	# Each NIC by its MAC under its test's name (virtio probes on insmod;
	# the loop only covers a late one).
	while read -r mac name; do
		n=0
		until ip -o link | grep -q " link/ether $mac "; do
			n=$((n + 1))
			[ $n -gt 100 ] && { echo "cats-vm: no NIC $mac"; break; }
			sleep 0.1
		done
		dev=$(ip -o link | grep " link/ether $mac " | cut -d: -f2 | tr -d ' ')
		ip link set "$dev" name "$name"
		ip link set "$name" up
	done </etc/cats-vm/nics
	ip link set lo up
	sysctl -qw net.ipv4.ip_forward=1
	sysctl -qw net.ipv6.conf.all.forwarding=1
	sysctl -qw net.mpls.platform_labels=100000
	for name in $(cut -d' ' -f2 /etc/cats-vm/nics); do
		sysctl -qw "net.mpls.conf.$name.input=1"
	done
	{ echo 'ip() { /usr/sbin/ip "$@"; }'; cat /etc/cats-vm/script; } >/run.sh
	if sh -ex /run.sh; then
		echo "cats-vm: ready"
	else
		echo "cats-vm: script failed"
	fi
	ip -d addr; ip route; ip -f mpls route
	while :; do sleep 3600; done
	EOF
}

# The package of the kernel linux-image-amd64 depends on (Debian only).
vm_kernel_pkg() {
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

# Fetch the kernel into $VM_CACHE/<package> once (under a lock: bats files
# may run at once) and build the initramfs; sets VM_DIR.  Fails with a
# reason on stdout.
vm_prepare() {
	local pkg
	pkg=$(vm_kernel_pkg)
	[ -n "$pkg" ] || { apt-get update -qq >/dev/null 2>&1; pkg=$(vm_kernel_pkg); }
	[ -n "$pkg" ] || { echo "no linux-image-amd64 in apt (not Debian?)"; return 1; }
	command -v qemu-system-x86_64 >/dev/null || { echo "no qemu-system-x86_64"; return 1; }
	[ -x /bin/busybox ] || { echo "no busybox (busybox-static)"; return 1; }
	VM_DIR=$VM_CACHE/$pkg
	mkdir -p "$VM_CACHE" || return 1
	(
		flock 9
		vm_fetch "$pkg" && vm_initramfs
	) 9>"$VM_CACHE/.lock"
}

# Download and unpack the kernel package; keep vmlinuz and the modules of
# VM_MODULES with their dependencies (Debian 12's are plain .ko; .ko.xz
# and .ko.zst are decompressed, busybox insmod takes neither).
vm_fetch() {
	local pkg=$1 tmp kdir order="" m f
	# The mark of a whole fetch, with the number of this layout.
	[ -f "$VM_DIR/fetched.2" ] && return 0
	tmp=$(mktemp -d "$VM_CACHE/fetch.XXXXXX")
	# apt-get download as root into a directory _apt cannot write warns;
	# the download is the same.
	(cd "$tmp" && apt-get download "$pkg" >download.log 2>&1) ||
		(cd "$tmp" && apt-get update -qq >/dev/null 2>&1 &&
		 apt-get download "$pkg" >download.log 2>&1) || {
		echo "apt-get download $pkg failed: $(tail -1 "$tmp/download.log")"
		rm -rf "$tmp"
		return 1
	}
	dpkg-deb -x "$tmp"/*.deb "$tmp/x" || { rm -rf "$tmp"; return 1; }
	kdir=$(echo "$tmp"/x/lib/modules/*)
	rm -rf "$VM_DIR"
	mkdir -p "$VM_DIR/mod"
	cp "$tmp"/x/boot/vmlinuz-* "$VM_DIR/vmlinuz"
	# The kernel uncompressed, an ELF qemu starts at its PVH entry: no
	# BIOS boot, no decompression by an emulated CPU (a TCG boot 9.5 s
	# where the bzImage took 22-27 s, load 14).  Debian 12's is xz.
	python3 - "$VM_DIR/vmlinuz" "$VM_DIR/vmlinux" <<-'EOF'
	import lzma, sys
	d = open(sys.argv[1], "rb").read()
	i = d.find(b"\xfd7zXZ\x00")
	if i >= 0:
	    elf = lzma.LZMADecompressor().decompress(d[i:])
	    if elf[:4] == b"\x7fELF":
	        open(sys.argv[2], "wb").write(elf)
	EOF
	# Depth first: a module after everything it depends on.
	vm_add_mod() {
		local m=$1 f d
		case " $order " in *" $m "*) return 0 ;; esac
		f=$(find "$kdir" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -1)
		# Not a module: built in.
		[ -n "$f" ] || return 0
		for d in $(modinfo -F depends "$f" | tr , ' '); do
			vm_add_mod "$d"
		done
		case $f in
		*.xz) xz -dc "$f" >"$VM_DIR/mod/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$VM_DIR/mod/$m.ko" ;;
		*) cp "$f" "$VM_DIR/mod/$m.ko" ;;
		esac
		order="$order $m"
	}
	for m in $VM_MODULES; do
		vm_add_mod "$m"
	done
	echo $order >"$VM_DIR/mod/order"
	rm -rf "$tmp"
	touch "$VM_DIR/fetched.2"
}

# The initramfs of busybox, ip and the modules, once per version of this
# file (its hash in the name).
vm_initramfs() {
	local sum root l
	sum=$(sha256sum "$BATS_TEST_DIRNAME/vm.bash" /bin/busybox | sha256sum | cut -c1-12)
	VM_INITRD=$VM_DIR/initrd-$sum.cpio.gz
	[ -f "$VM_INITRD" ] && return 0
	root=$(mktemp -d "$VM_CACHE/root.XXXXXX")
	mkdir -p "$root"/bin "$root"/proc "$root"/sys "$root"/dev "$root"/etc/cats-vm
	cp /bin/busybox "$root/bin/"
	for l in $(/bin/busybox --list | grep -vx busybox); do
		ln -s busybox "$root/bin/$l"
	done
	# iproute2's ip (busybox's has no MPLS) with its shared libraries
	# (and busybox's, should it be Debian's dynamic one).
	# Debian's busybox sh runs its own applet for a bare "ip" whatever
	# is in PATH: /init and the test's script call it by a function.
	mkdir -p "$root/usr/sbin"
	cp "$(command -v ip)" "$root/usr/sbin/ip"
	for l in $(ldd "$(command -v ip)" /bin/busybox 2>/dev/null |
	    awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && NF == 2 { print $1 }' | sort -u); do
		mkdir -p "$root$(dirname "$l")"
		cp -L "$l" "$root$l"
	done
	cp -r "$VM_DIR/mod" "$root/mod"
	vm_init >"$root/init"
	chmod 755 "$root/init"
	(cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) \
		>"$VM_INITRD.tmp" && mv "$VM_INITRD.tmp" "$VM_INITRD"
	rm -rf "$root"
	rm -f $(ls "$VM_DIR"/initrd-*.cpio.gz | grep -vx "$VM_INITRD")
}

# MAC of NIC $1 (a guest name of VM_NICS) in the guest, and of its host tap.
vm_index() {
	local i=0 n
	for n in $VM_NICS; do
		i=$((i + 1))
		[ "${n%%=*}" = "$1" ] && { echo "$i"; return 0; }
	done
	echo "vm: no NIC $1 in VM_NICS" >&2
	return 1
}
vm_mac() { printf '52:54:00:00:00:%02x\n' "$(vm_index "$1")"; }
vm_tap_mac() { printf '02:cc:00:00:00:%02x\n' "$(vm_index "$1")"; }

# The guest is ready, its script failed, or qemu is gone.
vm_settled() {
	grep -q "cats-vm: \(ready\|script failed\)" "$FWD_DIR/vm.console" ||
		! kill -0 "$(cat "$FWD_DIR/vm.pid")" 2>/dev/null
}

# Start the VM: qemu in namespace $1, guest commands in file $2; once qemu
# holds the taps, each moved to its namespace and brought up.
vm_start() {
	local ns=$1 script=$2 n guest hostns tap args="" i=0 accel kernel
	vm_prepare >"$FWD_DIR/vm.prepare" || {
		echo "vm: $(cat "$FWD_DIR/vm.prepare")"
		return 1
	}
	vm_initramfs
	mkdir -p "$FWD_DIR/vmrd/etc/cats-vm"
	: >"$FWD_DIR/vmrd/etc/cats-vm/nics"
	for n in $VM_NICS; do
		guest=${n%%=*} tap=${n##*:}
		i=$((i + 1))
		ip netns exec "$ns" ip tuntap add "$tap" mode tap
		ip netns exec "$ns" ip link set "$tap" address "$(vm_tap_mac "$guest")"
		ip netns exec "$ns" ip link set "$tap" up
		echo "$(vm_mac "$guest") $guest" >>"$FWD_DIR/vmrd/etc/cats-vm/nics"
		# No offloads, no virtio header on the tap (qemu's capture would
		# begin with it): what the guest sends is whole (checksums
		# included), as a real NIC puts it on the wire.  No iPXE ROM
		# (SeaBIOS ran each NIC's, seconds under TCG).
		args="$args -netdev tap,id=n$i,ifname=$tap,script=no,downscript=no,vnet_hdr=off"
		args="$args -device virtio-net-pci,netdev=n$i,mac=$(vm_mac "$guest"),csum=off,guest_csum=off,gso=off,guest_tso4=off,guest_tso6=off,guest_ecn=off,guest_ufo=off,host_tso4=off,host_tso6=off,host_ecn=off,host_ufo=off,romfile="
		case " ${VM_DUMP:-} " in
		*" $guest "*)
			args="$args -object filter-dump,id=d$i,netdev=n$i,file=$FWD_DIR/core_vm_$guest.pcap" ;;
		esac
	done
	cp "$script" "$FWD_DIR/vmrd/etc/cats-vm/script"
	# The test's part appended to the cached initramfs (the kernel reads
	# one archive after the other; an uncompressed one would have to
	# start 4-byte aligned).
	{
		cat "$VM_INITRD"
		(cd "$FWD_DIR/vmrd" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1)
	} >"$FWD_DIR/vm.initrd"
	# KVM where the CPU has it, else TCG.  qemu's own fallback (-accel kvm
	# -accel tcg) is no use where /dev/kvm opens but the CPU flags show
	# no vmx/svm (this machine): with -cpu host or max KVM aborts setting
	# an MSR, with the default CPU the guest hangs in the BIOS.
	accel="-accel tcg -cpu max"
	if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo; then
		accel="-accel kvm -cpu host"
	fi
	accel=${VM_ACCEL:-$accel}
	: >"$FWD_DIR/vm.console"
	kernel=$VM_DIR/vmlinuz
	[ -f "$VM_DIR/vmlinux" ] && kernel=$VM_DIR/vmlinux
	VM_T0=$(date +%s.%N)
	bg vm "$ns" qemu-system-x86_64 -nodefaults -no-user-config -nographic \
		-machine q35 $accel -m 256 -smp 1 \
		-kernel "$kernel" -initrd "$FWD_DIR/vm.initrd" \
		-append "console=ttyS0 panic=-1 quiet mitigations=off no_timer_check" -no-reboot \
		-serial "file:$FWD_DIR/vm.console" -monitor none $args
	# The taps move as soon as qemu holds them (a tap's carrier is on
	# once a queue is attached): the test sets up its side while the
	# guest boots, then waits for it with vm_wait.
	for n in $VM_NICS; do
		hostns=${n#*=}
		hostns=${hostns%%:*} tap=${n##*:}
		wait_on "$(cat "$FWD_DIR/vm.pid")" \
			ip netns exec "$ns" grep -qx 1 "/sys/class/net/$tap/carrier" || {
			echo "vm: qemu did not open tap $tap"
			cat "$FWD_DIR/vm.err"
			return 1
		}
		[ "$hostns" = "$ns" ] && continue
		ip netns exec "$ns" ip link set "$tap" netns "$hostns"
		ip netns exec "$hostns" ip link set "$tap" up
	done
}

# Wait for the guest's ready line (its script run); VM_BOOT: seconds from
# the start of qemu.
vm_wait() {
	# quiet: the serial console costs a TCG boot seconds; the kernel is
	# silent until /init, 60 s without a line is a stuck boot.
	wait_progress 600 "stat -c %s $FWD_DIR/vm.console" vm_settled
	grep -q "cats-vm: ready" "$FWD_DIR/vm.console" || {
		echo "vm: not ready; console:"
		tail -30 "$FWD_DIR/vm.console"
		cat "$FWD_DIR/vm.err"
		return 1
	}
	VM_BOOT=$(awk -v t0="$VM_T0" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }')
}
