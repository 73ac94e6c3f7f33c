// A uPlot chart as a preact component. uPlot draws on a canvas (nothing from the API reaches
// the DOM as markup); the instance is made once and fed new data with setData.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const kColours = ['#2f7ed8', '#d9534f', '#5cb85c', '#f0ad4e', '#8e44ad', '#16a085', '#7f8c8d', '#c0392b'];

// The chart fills its box, inside the box's padding.
function chartWidth(box) {
  const style = getComputedStyle(box);
  return Math.max(300, box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
}

// data: [xs (unix seconds), ...ys]; series: [{label, scale, unit}] for each ys; axes: {scale:
// label} (the scale '%' runs 0-100, others from 0). Re-created when the series change, updated in
// place otherwise.
export function Chart({ title, data, series, axes, height = 220 }) {
  const box = useRef(null);
  const plot = useRef(null);
  const shape = JSON.stringify([series, axes]);
  useEffect(() => {
    const scales = { x: { time: true } };
    const axisList = [{}];
    Object.entries(axes).forEach(([scale, label], i) => {
      scales[scale] = scale === '%' ? { range: [0, 100] } : { range: (u, min, max) => [0, Math.max(1, max)] };
      axisList.push({ scale, label, side: i === 0 ? 3 : 1, grid: { show: i === 0 } });
    });
    const options = {
      title,
      width: chartWidth(box.current),
      height,
      scales,
      axes: axisList,
      series: [
        {},
        ...series.map((s, i) => ({
          label: s.label,
          scale: s.scale,
          stroke: kColours[i % kColours.length],
          width: 1.5,
          value: (u, v) => (v == null ? '–' : `${v.toFixed(1)}${s.unit ? ' ' + s.unit : ''}`),
        })),
      ],
    };
    plot.current = new uPlot(options, data, box.current);
    const resize = () => plot.current.setSize({ width: chartWidth(box.current), height });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current.destroy();
      plot.current = null;
    };
  }, [shape]);
  useEffect(() => {
    if (plot.current) plot.current.setData(data);
  }, [data]);
  return <div class="chart" ref={box} />;
}
