// What ran in the longest main-thread stretch of a CPU profile that size.mjs wrote
// (TILE_LAB_CPU_PROFILES=dir): the busy stretches (samples between two idle ones; tasks that
// follow each other with no idle sample between count as one), the time of each stretch
// spent under a frame of the extension's bundle, and for the longest one the frames with
// the most time under them (inclusive), each with its callers.
//
//   node ui-test/cpuprofile_tasks.mjs FILE.cpuprofile [bundle URL regexp] [frames to list]
//
// The bundle is the one whose frames are named renderModel, parseProfile, ... (default: any
// remoteEntry chunk of tile-lab, as JupyterLab serves it from /lab/extensions/tile-lab/).

import { readFileSync } from 'node:fs';

const [file, bundleArg, topArg] = process.argv.slice(2);
const bundle = new RegExp(bundleArg ?? '/lab/extensions/tile-lab/');
const top = Number(topArg ?? 25);
const p = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(p.nodes.map(n => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) {
  for (const c of n.children ?? []) {
    parent.set(c, n.id);
  }
}
const chain = id => {
  const out = [];
  for (; id !== undefined; id = parent.get(id)) {
    out.push(byId.get(id));
  }
  return out; // innermost first
};
const fname = n => n.callFrame.functionName || '(anonymous)';
let t = p.startTime;
const times = p.timeDeltas.map(d => (t += d));
const ms = us => (us / 1000).toFixed(0);

// busy stretches
const stretches = [];
let cur = null;
for (let i = 0; i < p.samples.length; i++) {
  const dt = (times[i + 1] ?? times[i]) - times[i];
  if (fname(byId.get(p.samples[i])) === '(idle)') {
    cur = null;
    continue;
  }
  if (!cur) {
    cur = { start: times[i], end: times[i], ours: 0, samples: [] };
    stretches.push(cur);
  }
  cur.end = times[i] + dt;
  cur.samples.push([i, dt]);
  if (chain(p.samples[i]).some(n => bundle.test(n.callFrame.url))) {
    cur.ours += dt;
  }
}
console.log('busy stretches over 50 ms: start ms, length ms, of it under the bundle ms');
for (const s of stretches.filter(s => s.end - s.start > 50_000)) {
  console.log(`  ${ms(s.start - p.startTime).padStart(7)} ${ms(s.end - s.start).padStart(7)} ${ms(s.ours).padStart(7)}`);
}
const longest = stretches.reduce((a, b) => (b.end - b.start > a.end - a.start ? b : a));
const incl = new Map();
for (const [i, dt] of longest.samples) {
  const c = chain(p.samples[i]);
  const seen = new Set();
  c.forEach((n, k) => {
    const callers = c.slice(k + 1, k + 4).map(fname).join(' < ');
    const key = `${fname(n)} < ${callers}`;
    if (!seen.has(key)) {
      seen.add(key);
      incl.set(key, (incl.get(key) ?? 0) + dt);
    }
  });
}
console.log(`longest: ${ms(longest.end - longest.start)} ms; most time under (ms, frame < its callers):`);
[...incl].sort((a, b) => b[1] - a[1]).slice(0, top).forEach(([k, v]) => console.log(`  ${ms(v).padStart(7)} ${k}`));
