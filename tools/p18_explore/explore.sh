# GPU exploration for issue 18 (helper p18). Run from .h_p18 with $OUT set.
set -u
L=$OUT/log.txt; X=$OUT/x; mkdir -p $X
exec > >(tee -a $L) 2>&1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv
NCU=$(which ncu); echo "ncu=$NCU real=$(readlink -f $NCU)"; ncu --version
NCUDIR=$(dirname $(readlink -f $NCU)); ls $NCUDIR; ls $NCUDIR/extras/python 2>&1 | head
ncu --list-sets 2>&1 | head -30
ncu --list-sections 2>&1 | head -60
ncu --query-metrics 2>/dev/null | grep -E "^(launch__|sm__warps_active|gpu__time_duration|smsp__sass_inst_executed_op_local|l1tex__t_bytes_pipe_lsu_mem_local|sass__inst_executed_register_spilling|smsp__pcsamp)" | head -60
T="python3 tools/p18_explore/target.py"
MET=launch__registers_per_thread,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__shared_mem_config_size,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__block_size,launch__grid_size,launch__waves_per_multiprocessor,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,gpu__time_duration.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,sm__cycles_elapsed.avg.per_second
SEC="--section SourceCounters --section WarpStateStats --section LaunchStats --section Occupancy --section SpeedOfLight"
for cfg in "vadd" "gemm 128 128 64" "gemm 256 256 32"; do
  tag=$(echo $cfg | tr ' ' _)
  echo "=== plain $cfg"; s=$(date +%s%N); $T $cfg; echo "plain_wall $tag $(( ($(date +%s%N)-s)/1000000 ))ms"
  echo "=== ncu sections $cfg"; s=$(date +%s%N)
  timeout 90 ncu $SEC --metrics $MET --import-source no --clock-control none -k regex:'gemm|vector' -c 1 -f -o $X/$tag $T $cfg > $X/$tag.ncu.log 2>&1; echo "rc=$? ncu_wall $tag $(( ($(date +%s%N)-s)/1000000 ))ms"; tail -5 $X/$tag.ncu.log
  ncu --import $X/$tag.ncu-rep --page source --csv --print-source sass > $X/$tag.source.csv 2> $X/$tag.source.err; echo "source rc=$? $(wc -lc < $X/$tag.source.csv)"; head -c 1500 $X/$tag.source.csv; echo; head -3 $X/$tag.source.err
  ncu --import $X/$tag.ncu-rep --page raw --csv > $X/$tag.raw.csv 2>&1; echo "raw $(wc -lc < $X/$tag.raw.csv)"
  ncu --import $X/$tag.ncu-rep --page details --csv > $X/$tag.details.csv 2>&1; echo "details $(wc -lc < $X/$tag.details.csv)"
  (cd $X && tar czf $OUT/exports.tgz *.csv *.log 2>/dev/null)
done
echo "=== cliff under --set full (repro)"
s=$(date +%s%N); timeout 100 ncu --set full --import-source yes --section SourceCounters --clock-control none -k regex:gemm -c 1 -f -o $X/cliff_full python3 tools/p18_explore/target.py gemm 256 256 32 > $X/cliff_full.log 2>&1; echo "rc=$? wall $(( ($(date +%s%N)-s)/1000000 ))ms"; tail -25 $X/cliff_full.log
if ! ls $X/cliff_full.ncu-rep >/dev/null 2>&1; then echo "=== cliff full, application replay"; s=$(date +%s%N); timeout 80 ncu --set full --replay-mode application --clock-control none -k regex:gemm -c 1 -f -o $X/cliff_app python3 tools/p18_explore/target.py gemm 256 256 32 > $X/cliff_app.log 2>&1; echo "rc=$? wall $(( ($(date +%s%N)-s)/1000000 ))ms"; tail -15 $X/cliff_app.log; fi
echo "=== ncu_report module"
PYTHONPATH=$NCUDIR/extras/python:${PYTHONPATH:-} python3 tools/p18_explore/dump_report.py $X/gemm_128_128_64.ncu-rep $X/gemm_128_128_64.report.json 2>&1 | tail -20
date -u
cd $X && tar czf $OUT/exports.tgz *.csv *.log *.json 2>/dev/null; ls -la $X; rm -rf $X
