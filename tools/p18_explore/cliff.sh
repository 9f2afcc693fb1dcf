# Call 2: why the cliff config fails under ncu (helper p18). From .h_p18 with $OUT set.
set -u
exec > >(tee -a $OUT/cliff_log.txt) 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.draw --format=csv,noheader
T="python3 tools/p18_explore/target.py gemm 256 256 32"
try() { local tag=$1; shift; local s=$(date +%s%N)
  timeout 60 ncu "$@" --clock-control none -k regex:gemm -c 1 -f -o /tmp/$tag $T > /tmp/$tag.log 2>&1
  echo "[$tag] rc=$? $(( ($(date +%s%N)-s)/1000000 ))ms :: $(grep -E 'ERROR|passes|wall' /tmp/$tag.log | tr '\n' ' ' | cut -c1-300)"; }
try launchonly --section LaunchStats --section Occupancy
try sol --section SpeedOfLight
try warpstate --section WarpStateStats
try pcsamp --section LaunchStats --metrics group:smsp__pcsamp_warp_stall_reasons,smsp__pcsamp_sample_count
try srccnt --section SourceCounters
try instexec --metrics smsp__sass_inst_executed.sum,inst_executed
try srcapp --section SourceCounters --replay-mode application
try srcnocache --section SourceCounters --cache-control none
export STACK=8192; try srcstack --section SourceCounters; unset STACK
try lmem --metrics l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,gpu__time_duration.sum
for t in pcsamp warpstate; do [ -f /tmp/$t.ncu-rep ] && ncu --import /tmp/$t.ncu-rep --page source --csv --print-source sass | head -4 | cut -c1-400; done
for t in launchonly sol warpstate pcsamp srccnt instexec srcapp srcnocache srcstack lmem; do
  [ -f /tmp/$t.ncu-rep ] && ncu --import /tmp/$t.ncu-rep --page source --csv --print-source sass > /tmp/$t.source.csv 2>/dev/null && ncu --import /tmp/$t.ncu-rep --page raw --csv > /tmp/$t.raw.csv 2>/dev/null
done
(cd /tmp && tar czf $OUT/cliff.tgz *.log *.csv)
which nvdisasm tileirdisasm ncu
