// Numbers in words a person reads.

export function megabytes(bytes: number): string {
  return `${(bytes / 1e6).toFixed(bytes < 10e6 ? 1 : 0)} MB`;
}

export function speed(bytesPerSec: number | null): string {
  return bytesPerSec == null ? "" : `${(bytesPerSec / 1e6).toFixed(1)} MB/s`;
}

export function duration(secs: number | null): string {
  if (secs == null) return "";
  if (secs < 60) return `${secs} s left`;
  const m = Math.floor(secs / 60);
  return m < 60 ? `${m} min ${secs % 60} s left` : `${Math.floor(m / 60)} h ${m % 60} min left`;
}

export function percent(done: number, total: number): number {
  return total > 0 ? Math.min(100, Math.floor((done * 100) / total)) : 0;
}
