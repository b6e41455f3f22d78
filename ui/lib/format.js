// Numbers, sizes and times as the pages show them.
const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function bytes(n) {
  let v = Number(n);
  let u = 0;
  while (Math.abs(v) >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${UNITS[u]}`;
}

export function count(n) {
  return Number(n).toLocaleString('en-US');
}

export function rate(n) {
  const v = Number(n);
  return v >= 100 ? count(Math.round(v)) : v.toFixed(1);
}

export function localTime(ms) {
  const n = Number(ms);
  if (!Number.isFinite(n) || n < 0) return '—';
  const d = new Date(n);
  const pad = (x, w = 2) => String(x).padStart(w, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function duration(ms) {
  const s = Math.round(Number(ms) / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}
