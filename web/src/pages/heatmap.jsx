// GPU heat map: one cell per GPU, grouped by node, coloured by the chosen reading (utilisation,
// memory used, temperature) from the live gpus stream, its conditions drawn on it (gpu_cell.jsx).
import { useState } from 'preact/hooks';
import { useLive } from '../live.js';
import { count } from '../format.js';
import { ErrorNote, Loading } from './common.jsx';
import { ConditionLegend, GpuCell, HeatLegend, holdersOf, kMetrics } from './gpu_cell.jsx';

export function HeatMap() {
  const live = useLive(['gpus', 'nodes']);
  const [metric, setMetric] = useState('util');
  if (live.errors.gpus && !live.gpus) return <ErrorNote error={live.errors.gpus} />;
  if (!live.gpus) return <Loading what="GPUs" />;
  const nodes = new Map();
  for (const node of live.nodes || []) nodes.set(node.name, { node, gpus: [] });
  for (const gpu of live.gpus) {
    if (!nodes.has(gpu.node)) nodes.set(gpu.node, { node: null, gpus: [] });
    nodes.get(gpu.node).gpus.push(gpu);
  }
  const held = live.gpus.filter((g) => holdersOf(g).length > 0).length;
  return (
    <section>
      <h1>GPUs</h1>
      <p class="summary">
        {count(live.gpus.length, 'GPU')} on {count(nodes.size, 'node')}, {held} held by jobs.
        {' '}Live: updated each time a reading changes.
      </p>
      <div class="toolbar" role="radiogroup" aria-label="colour by">
        {Object.entries(kMetrics).map(([key, m]) => (
          <label key={key}>
            <input type="radio" name="metric" checked={metric === key} onChange={() => setMetric(key)} />
            {m.label}
          </label>
        ))}
      </div>
      {[...nodes.values()].map(({ node, gpus }) => (
        <div class="node" key={node ? node.name : gpus[0].node}>
          <h2>
            {node ? node.name : gpus[0].node}
            {node && <span class={`badge state-${node.state}`}>{node.state}</span>}
            {node && node.state_reason && <span class="muted"> {node.state_reason}</span>}
          </h2>
          <div class="grid">
            {gpus.map((gpu) => <GpuCell key={gpu.uuid} gpu={gpu} metric={metric} />)}
          </div>
        </div>
      ))}
      <HeatLegend />
      <ConditionLegend />
    </section>
  );
}
