#!/bin/sh
# The metrics an SCI reports for a demo instance, from its real load:
#
#   sci-metrics.sh LOADFILE BASE_MS CAPACITY
#
# LOADFILE holds the instance's active connections (instance.py keeps it);
# each one adds 10 ms of computing time and takes one of CAPACITY slots.
# Prints the JSON object `cats-sci --exec` reads before each report.
load=$(cat "$1" 2>/dev/null || echo 0)
case $load in '' | *[!0-9]*) load=0 ;; esac
gas=$(($3 - load))
[ "$gas" -lt 0 ] && gas=0
printf '{"gas":%d,"comp_time_ms":%d,"health":"HEALTHY"}\n' "$gas" $(($2 + 10 * load))
