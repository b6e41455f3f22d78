// Preact + htm, shared components: charts (uPlot), tables that scroll on narrow screens, errors.
import { h } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import htm from 'htm';
import { api } from './api.js';
import { bytes, rate } from './format.js';

export const html = htm.bind(h);

// uPlot (a third of the bundle) is a chunk of its own, loaded when a page first draws a chart: the
// pages' tables are there before it is parsed
let uplot = null;
const loadUPlot = () => (uplot ??= import('uplot').then((m) => m.default));

/** Polls `load` now and every `ms` while mounted; returns {data, error, reload}. */
export function usePoll(load, ms, deps = []) {
  const [state, setState] = useState({ data: null, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    let timer = null;
    const run = async () => {
      try {
        const data = await load();
        if (live) setState({ data, error: null });
      } catch (error) {
        if (live) setState((s) => ({ data: s.data, error }));
      }
      if (live && ms > 0) timer = setTimeout(run, ms);
    };
    void run();
    return () => {
      live = false;
      if (timer !== null) clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}

export function ErrorNote({ error }) {
  if (!error) return null;
  return html`<p class="error" role="alert">${error.message}</p>`;
}

/** A table in a region that scrolls sideways on narrow screens (focusable, so the keyboard can scroll it). */
export function TableWrap({ label, children }) {
  return html`<div class="table-wrap" role="region" aria-label=${label} tabindex="0">${children}</div>`;
}

const COLORS = ['#1f5fbf', '#b3471d', '#2d7d46', '#7a3fa0'];

/** A time-series chart: `data` is [unix seconds[], ...series[]]; `series` their labels. */
export function Chart({ title, data, series, format = (v) => String(v) }) {
  const box = useRef(null);
  const plot = useRef(null);
  const latest = useRef(data);
  latest.current = data;
  useEffect(() => {
    const el = box.current;
    if (el === null) return undefined;
    let live = true;
    const width = () => Math.max(260, el.clientWidth);
    const onResize = () => plot.current?.setSize({ width: width(), height: 180 });
    void loadUPlot().then((UPlot) => {
      if (!live) return;
      plot.current = new UPlot(
        {
          width: width(),
          height: 180,
          legend: { show: true },
          cursor: { drag: { x: false, y: false } },
          scales: { x: { time: true } },
          axes: [{}, { values: (_u, vals) => vals.map((v) => format(v)), size: 70 }],
          series: [
            {},
            ...series.map((label, i) => ({
              label,
              stroke: COLORS[i % COLORS.length],
              width: 1.5,
              value: (_u, v) => (v == null ? '—' : format(v)),
            })),
          ],
        },
        latest.current,
        el,
      );
      window.addEventListener('resize', onResize);
    });
    return () => {
      live = false;
      window.removeEventListener('resize', onResize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, [series.join('|')]);
  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);
  const last = data[1]?.length
    ? series.map((s, i) => `${s} ${format(data[i + 1][data[i + 1].length - 1] ?? 0)}`).join(', ')
    : 'no data yet';
  return html`<figure class="chart">
    <figcaption>${title}</figcaption>
    <div ref=${box} role="img" aria-label=${`${title}, over time (a sample a second); latest: ${last}`}></div>
  </figure>`;
}

/** A history answer ({start, series: {name: number[]}}) as uPlot data: [unix seconds[], ...the named series]. */
export function toChartData(h, names) {
  const first = h.series[names[0]] ?? [];
  return [first.map((_v, i) => h.start + i), ...names.map((n) => h.series[n] ?? [])];
}

/** Messages and bytes in and out per second, polled from `path` (the broker's or a topic's history). */
export function ThroughputCharts({ path }) {
  const hist = usePoll(() => api(path), 2000, [path]);
  const data = useMemo(
    () =>
      hist.data && {
        messages: toChartData(hist.data, ['messagesIn', 'messagesOut']),
        bytes: toChartData(hist.data, ['bytesIn', 'bytesOut']),
      },
    [hist.data],
  );
  return html`<${ErrorNote} error=${hist.error} /> ${
      data &&
      html`<div class="charts">
        <${Chart} title="Messages per second" data=${data.messages} series=${['in', 'out']} format=${rate} />
        <${Chart} title="Bytes per second" data=${data.bytes} series=${['in', 'out']} format=${bytes} />
      </div>`
    }`;
}

/** Under a table the broker sent the first rows of (the topic's partitions, a group's lag): how many, and a button for all. */
export function MoreRows({ shown, total, what, onAll }) {
  if (shown >= total) return null;
  return html`<p>
    <span class="muted">Showing ${shown} of ${total} ${what}. </span>
    <button type="button" class="secondary" onClick=${onAll}>Show all ${total} ${what}</button>
  </p>`;
}
