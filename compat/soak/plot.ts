/**
 * The soak's plot: one SVG of stacked panels over the run's time axis (memory, descriptors and
 * handles, event-loop delay, CPU), plain SVG text (polylines) on compat/lib/svg-chart.ts's scale and
 * label helpers, so no charting dependency.
 */
import { escapeXml, formatNumber, niceScale } from '../lib/svg-chart.js';
import { segmentFileFds, type Sample } from './sampler.js';

export interface Panel {
  title: string;
  unit: string;
  lines: { name: string; y: (s: Sample) => number }[];
  /** a horizontal reference line (e.g. the 20 ms loop-delay limit) */
  limit?: number;
}

const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#59a14f', '#b07aa1', '#76b7b2'];
const MB = 1024 * 1024;

export const SOAK_PANELS: readonly Panel[] = [
  {
    title: 'Broker memory',
    unit: 'MB',
    lines: [
      { name: 'RSS', y: (s) => s.rssBytes / MB },
      { name: 'heap total', y: (s) => s.heapTotalBytes / MB },
      { name: 'heap used', y: (s) => s.heapUsedBytes / MB },
      { name: 'external', y: (s) => s.externalBytes / MB },
    ],
  },
  {
    title: 'Open file descriptors and active handles',
    unit: 'count',
    lines: [
      { name: 'fds', y: (s) => s.fds },
      { name: 'segment files', y: (s) => s.segmentFiles },
      { name: 'fds not on segments', y: (s) => s.fds - segmentFileFds(s.fdKinds) - s.fdKinds.unlinked },
      { name: 'active handles', y: (s) => s.activeHandles },
    ],
  },
  {
    title: 'Open fds by kind, and the segments the broker holds',
    unit: 'count',
    lines: [
      { name: 'segments held', y: (s) => s.brokerSegments },
      { name: '.log', y: (s) => s.fdKinds.log },
      { name: 'index files', y: (s) => s.fdKinds.index + s.fdKinds.timeindex + s.fdKinds.txnindex },
      { name: 'awaiting deletion', y: (s) => s.fdKinds.pendingDelete + s.fdKinds.unlinked },
      { name: 'sockets', y: (s) => s.fdKinds.socket },
      {
        name: 'other',
        y: (s) => s.fdKinds.checkpoint + s.fdKinds.otherFile + s.fdKinds.pipe + s.fdKinds.anon + s.fdKinds.other + s.fdKinds.cleaner,
      },
    ],
  },
  {
    title: 'Event-loop delay per sampling interval',
    unit: 'ms',
    limit: 20,
    lines: [
      { name: 'p50', y: (s) => s.loopDelayP50Ms },
      { name: 'p99', y: (s) => s.loopDelayP99Ms },
    ],
  },
  { title: 'Broker CPU', unit: '% of one core', lines: [{ name: 'CPU', y: (s) => s.cpuPercent }] },
];

export function renderSoakPlot(samples: readonly Sample[], title: string, panels: readonly Panel[] = SOAK_PANELS): string {
  const W = 900;
  const PH = 220;
  const m = { top: 34, right: 20, bottom: 40, left: 64 };
  const pw = W - m.left - m.right;
  const H = 40 + panels.length * (PH + m.top + m.bottom);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#ffffff"/>`,
    `<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  const tMax = Math.max(1, ...samples.map((s) => s.t));
  const xScale = niceScale(tMax / 60, 8);
  const xPos = (t: number): number => m.left + (t / 60 / xScale.max) * pw;
  panels.forEach((panel, pi) => {
    const top = 40 + pi * (PH + m.top + m.bottom) + m.top;
    const ys = panel.lines.flatMap((l) => samples.map((s) => l.y(s))).filter((y) => Number.isFinite(y));
    const { max, step } = niceScale(Math.max(0, panel.limit ?? 0, ...ys));
    const yPos = (y: number): number => top + PH - (y / max) * PH;
    out.push(`<text x="${m.left}" y="${top - 10}" font-weight="bold">${escapeXml(`${panel.title} (${panel.unit})`)}</text>`);
    for (let v = 0; v <= max + 1e-9; v += step) {
      const y = yPos(v).toFixed(1);
      out.push(`<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#e0e0e0"/>`);
      out.push(`<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${formatNumber(v)}</text>`);
    }
    for (let v = 0; v <= xScale.max + 1e-9; v += xScale.step) {
      const x = xPos(v * 60).toFixed(1);
      out.push(`<text x="${x}" y="${top + PH + 16}" text-anchor="middle">${formatNumber(v)}</text>`);
    }
    out.push(`<text x="${m.left + pw / 2}" y="${top + PH + 32}" text-anchor="middle">minutes</text>`);
    out.push(`<line x1="${m.left}" y1="${top + PH}" x2="${m.left + pw}" y2="${top + PH}" stroke="#333"/>`);
    out.push(`<line x1="${m.left}" y1="${top}" x2="${m.left}" y2="${top + PH}" stroke="#333"/>`);
    if (panel.limit !== undefined) {
      const y = yPos(panel.limit).toFixed(1);
      out.push(`<line x1="${m.left}" y1="${y}" x2="${m.left + pw}" y2="${y}" stroke="#e15759" stroke-dasharray="6 4"/>`);
      out.push(`<text x="${m.left + pw - 4}" y="${Number(y) - 4}" text-anchor="end" fill="#e15759">limit ${panel.limit}</text>`);
    }
    let lx = m.left + 260;
    panel.lines.forEach((line, li) => {
      const color = COLORS[li % COLORS.length] ?? '#333';
      const pts = samples
        .filter((s) => Number.isFinite(line.y(s)))
        .map((s) => `${xPos(s.t).toFixed(1)},${yPos(line.y(s)).toFixed(1)}`)
        .join(' ');
      out.push(`<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${pts}"/>`);
      out.push(`<rect x="${lx}" y="${top - 20}" width="10" height="10" fill="${color}"/>`);
      out.push(`<text x="${lx + 14}" y="${top - 11}">${escapeXml(line.name)}</text>`);
      lx += 30 + line.name.length * 7;
    });
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
