// A uPlot chart as a preact component. uPlot draws on a canvas (nothing from the API reaches
// the DOM as markup); the instance is made once and fed new data with setData.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { day, time } from './format.js';

const kColours = ['#2f7ed8', '#d9534f', '#5cb85c', '#f0ad4e', '#8e44ad', '#16a085', '#7f8c8d', '#c0392b'];

// The chart fills its box, inside the box's padding.
function chartWidth(box) {
  const style = getComputedStyle(box);
  return Math.max(300, box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
}

// Times in UTC, as every page shows them (format.js time()).
const utc = (seconds) => uPlot.tzDate(new Date(seconds * 1000), 'Etc/UTC');
const kDay = 86400;

// The x axis: 'time' (instants; ticks and the legend in UTC ISO 8601) or 'day' (xs are UTC
// midnights, one a day: ticks only on whole days, the axis half a day wider each side so the
// first and last points are not on its edges, and the legend names the day). The legend's x
// value shows what the cursor is on, and says so while the cursor is off the chart.
function xAxis(kind, xs) {
  const legend = (format) => (u, v) => (v == null ? 'hover the chart' : format(v));
  if (kind === 'day') {
    const first = xs.length > 0 ? xs[0] : 0;
    const last = xs.length > 0 ? xs[xs.length - 1] : 0;
    return {
      scale: { time: true, range: () => [first - kDay / 2, last + kDay / 2] },
      axis: { incrs: [kDay, 2 * kDay, 7 * kDay, 14 * kDay], values: (u, ticks) => ticks.map((t) => day(t * 1000).slice(5)) },
      series: { label: 'day (UTC)', value: legend((v) => day(v * 1000)) },
    };
  }
  // Ticks in the same ISO form: the time of day, with the date once the axis spans days.
  const ticks = (u, values) => values.map((t) => {
    const iso = time(t * 1000);
    return u.scales.x.max - u.scales.x.min > kDay ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 19);
  });
  return { scale: { time: true }, axis: { values: ticks }, series: { label: 'time (UTC)', value: legend((v) => time(v * 1000)) } };
}

// data: [xs (unix seconds), ...ys], a null y a gap; series: [{label, scale, unit}] for each ys;
// axes: {scale: label or {label, max}} (the scale '%' runs 0-100, others from 0 to `max` where
// given, e.g. a card's memory, else to the data's highest); x: 'time' or 'day' (xAxis).
// Re-created when the series or axes change, updated in place otherwise.
export function Chart({ title, data, series, axes, x = 'time', height = 220 }) {
  const box = useRef(null);
  const plot = useRef(null);
  const shape = JSON.stringify([series, axes, x, x === 'day' ? data[0] : null]);
  useEffect(() => {
    const xs = xAxis(x, data[0]);
    const scales = { x: xs.scale };
    const axisList = [xs.axis];
    Object.entries(axes).forEach(([scale, axis], i) => {
      const { label, max: top } = typeof axis === 'string' ? { label: axis } : axis;
      scales[scale] = scale === '%' ? { range: [0, 100] } : { range: (u, min, max) => [0, top ?? Math.max(1, max)] };
      axisList.push({ scale, label, side: i === 0 ? 3 : 1, grid: { show: i === 0 } });
    });
    const options = {
      title,
      width: chartWidth(box.current),
      height,
      tzDate: utc,
      scales,
      axes: axisList,
      series: [
        xs.series,
        ...series.map((s, i) => ({
          label: s.label,
          scale: s.scale,
          stroke: kColours[i % kColours.length],
          width: 1.5,
          // A day's figure stands alone between gaps: a point shows it where no line can.
          points: x === 'day' ? { show: true, size: 7, fill: kColours[i % kColours.length] } : {},
          value: (u, v) => (v == null ? '–' : `${v.toFixed(1)}${s.unit ? ' ' + s.unit : ''}`),
        })),
      ],
    };
    // Each y scale's range as drawn, on the box (data-scales, JSON): what the axes really show,
    // for the browser test to hold against the API (a card's memory).
    options.hooks = {
      setScale: [(u, key) => {
        if (key === 'x') return;
        const scales = JSON.parse(box.current.dataset.scales || '{}');
        scales[key] = [u.scales[key].min, u.scales[key].max];
        box.current.dataset.scales = JSON.stringify(scales);
      }],
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
