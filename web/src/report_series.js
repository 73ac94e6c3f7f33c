// The monthly report's per-day chart data (pages/report.jsx), apart from the page so that node
// tests can run it (web/test/).

// [xs, allocated, used] for uPlot from the report's `days`: xs each day's UTC midnight in unix
// seconds, one a day; allocated_pct, and util_pct as "used" (the mean utilisation over every
// observed minute, so both are shares of the same GPU time, as the HTML report draws them). A
// day without samples is null, a gap: nothing was measured there, which is not 0 %.
export function dailySeries(days) {
  const seen = (d) => d.figures.minutes_observed > 0;
  return [
    days.map((d) => Date.parse(`${d.day}T00:00:00Z`) / 1000),
    days.map((d) => (seen(d) ? d.figures.allocated_pct : null)),
    days.map((d) => (seen(d) ? d.figures.util_pct : null)),
  ];
}

// Whether any day has samples: without one there is nothing to chart.
export function anyDaySampled(days) {
  return days.some((d) => d.figures.minutes_observed > 0);
}
