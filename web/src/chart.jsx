// A uPlot chart as a preact component. uPlot draws on a canvas (nothing from the API reaches
// the DOM as markup); the instance is made once and fed new data with setData.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { day, time, kTimeIncrs } from './format.js';
import { cssColour, useTheme } from './theme.js';

const kColours = ['#2f7ed8', '#d9534f', '#5cb85c', '#f0ad4e', '#8e44ad', '#16a085', '#7f8c8d', '#c0392b'];

// The chart fills its box, inside the box's padding.
function chartWidth(box) {
  const style = getComputedStyle(box);
  return Math.max(300, box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight));
}

// How much larger than the stylesheet's 14 px the page's text is now (a wall screen's is 20 px:
// style.css): the canvas's text and the chart's height follow, as the canvas has no rem.
function textScale() {
  return parseFloat(getComputedStyle(document.documentElement).fontSize) / 14;
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
  // Ticks in the same ISO form: the time of day, with the date once the axis spans days. The
  // labels show whole seconds, so ticks are never closer than a second (kTimeIncrs): uPlot's
  // own steps go down to milliseconds, and a 2 s run had eleven ticks all labelled alike.
  const ticks = (u, values) => {
    const labels = values.map((t) => {
      const iso = time(t * 1000);
      return u.scales.x.max - u.scales.x.min > kDay ? `${iso.slice(5, 10)} ${iso.slice(11, 16)}` : iso.slice(11, 19);
    });
    const box = u.root.parentNode;
    if (box) box.dataset.xticks = JSON.stringify(labels);  // for the browser test
    return labels;
  };
  // Data spanning under 2 s (a run with one sample spans none: uPlot would then widen the axis
  // to a thousand days, with no tick to draw) gets a second either side, ticks to label.
  const range = (u, min, max) => {
    const xs = u.data[0];
    const first = xs[0];
    const last = xs[xs.length - 1];
    return xs.length > 0 && last - first < 2 && min <= first && max >= last ? [first - 1, last + 1] : [min, max];
  };
  return {
    scale: { time: true, range },
    axis: { values: ticks, incrs: kTimeIncrs },
    series: { label: 'time (UTC)', value: legend((v) => time(v * 1000)) },
  };
}

// data: [xs (unix seconds), ...ys], a null y a gap; series: [{label, scale, unit, colour,
// dash}] for each ys; axes: {scale: label or {label, max}} (the scale '%' runs 0-100, others
// from 0 to `max` where given, e.g. a card's memory, else to the data's highest); x: 'time' or
// 'day' (xAxis). Zoom, when the page offers it: `zoom` is the x range shown ([from, to] in
// Unix seconds, null: all of the data) and a drag across the chart calls onZoom with the range
// it covers. Re-created when the series, axes or theme change, updated in place otherwise.
export function Chart({ title, data, series, axes, x = 'time', height = 220, zoom = null, onZoom = null }) {
  const box = useRef(null);
  const plot = useRef(null);
  const zoomTo = useRef(onZoom);
  zoomTo.current = onZoom;
  const theme = useTheme();
  const [scale, setTextScaleState] = useState(textScale);
  const shape = JSON.stringify([series, axes, x, x === 'day' ? data[0] : null, theme, !!onZoom, scale]);
  useEffect(() => {
    const xs = xAxis(x, data[0]);
    const scales = { x: xs.scale };
    const axisList = [xs.axis];
    Object.entries(axes).forEach(([scale, axis], i) => {
      const { label, max: top } = typeof axis === 'string' ? { label: axis } : axis;
      scales[scale] = scale === '%' ? { range: [0, 100] } : { range: (u, min, max) => [0, top ?? Math.max(1, max)] };
      axisList.push({ scale, label, side: i === 0 ? 3 : 1, grid: { show: i === 0 } });
    });
    // The theme's ink for the axes and grid: uPlot's defaults are black on the canvas.
    const ink = cssColour('--muted');
    const grid = cssColour('--line');
    const font = `${Math.round(12 * scale)}px system-ui, sans-serif`;
    for (const axis of axisList) {
      axis.font = font;
      axis.labelFont = `bold ${font}`;
      axis.size = Math.round(50 * scale);
      axis.stroke = ink;
      if (axis === axisList[0]) axis.space = Math.round(60 * scale);  // an HH:MM:SS label's width
      axis.grid = { ...(axis.grid || {}), stroke: grid };
      axis.ticks = { stroke: grid };
    }
    const options = {
      title,
      width: chartWidth(box.current),
      height: Math.round(height * scale),
      tzDate: utc,
      scales,
      axes: axisList,
      series: [
        xs.series,
        ...series.map((s, i) => ({
          label: s.label,
          scale: s.scale,
          stroke: s.colour || kColours[i % kColours.length],
          dash: s.dash,
          width: 1.5,
          // A day's figure stands alone between gaps: a point shows it where no line can.
          points: x === 'day' ? { show: true, size: 7, fill: kColours[i % kColours.length] } : {},
          value: (u, v) => (v == null ? '–' : `${v.toFixed(1)}${s.unit ? ' ' + s.unit : ''}`),
        })),
      ],
    };
    // Each y scale's range as drawn, on the box (data-scales, JSON): what the axes really show,
    // for the browser test to hold against the API (a card's memory).
    if (onZoom) {
      // A drag selects; the page decides the range (every chart of it shows the same one).
      options.cursor = { drag: { x: true, y: false, setScale: false } };
    }
    options.hooks = {
      setSelect: [(u) => {
        if (zoomTo.current && u.select.width > 2) {
          zoomTo.current([u.posToVal(u.select.left, 'x'), u.posToVal(u.select.left + u.select.width, 'x')]);
        }
        if (zoomTo.current) u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
      }],
      setScale: [(u, key) => {
        if (key === 'x') return;
        const scales = JSON.parse(box.current.dataset.scales || '{}');
        scales[key] = [u.scales[key].min, u.scales[key].max];
        box.current.dataset.scales = JSON.stringify(scales);
      }],
    };
    plot.current = new uPlot(options, data, box.current);
    const resize = () => {
      if (textScale() !== scale) setTextScaleState(textScale());  // drawn again at the new size
      else plot.current.setSize({ width: chartWidth(box.current), height: Math.round(height * scale) });
    };
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current.destroy();
      plot.current = null;
    };
  }, [shape]);
  useEffect(() => {
    if (!plot.current) return;
    plot.current.setData(data, !zoom);
    if (zoom) plot.current.setScale('x', { min: zoom[0], max: zoom[1] });
  }, [data, zoom, shape]);
  return <div class="chart" ref={box} data-points={data[0].length} />;
}
