import json, sys, time
t = time.perf_counter()
import ncu_report
ctx = ncu_report.load_report(sys.argv[1])
out = {}
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        d = {"name": act.name(), "metrics": {}}
        for name in act.metric_names():
            m = act.metric_by_name(name)
            try:
                if m.num_instances() > 0:
                    d["metrics"][name] = {"instances": m.num_instances(), "first": str(m.as_string(0)) if hasattr(m,'as_string') else None}
                else:
                    d["metrics"][name] = m.as_string()
            except Exception as e:
                d["metrics"][name] = f"ERR {e}"
        print("methods", [x for x in dir(act) if not x.startswith("_")])
        out[f"{r}.{a}"] = d
json.dump(out, open(sys.argv[2], "w"), indent=0, default=str)
print("dumped", len(out), "actions in", time.perf_counter() - t)
