//! `iolens monitor` in the terminal: `iostat -x`'s columns per device, one table per sample.

use iolens_metrics::IostatRow;

use super::table::Table;

/// One sample of every watched device, as `iostat -x` lays it out.
pub fn render(rows: &[IostatRow]) -> String {
    // iostat -x's columns, in IEC units (MiB/s, KiB) and microseconds.
    let header = vec![
        "device",
        "r/s",
        "w/s",
        "rMiB/s",
        "wMiB/s",
        "rrqm/s",
        "wrqm/s",
        "avgrq KiB",
        "avgqu-sz",
        "r_await µs",
        "w_await µs",
        "%util",
    ];
    const MIB: f64 = (1u64 << 20) as f64;
    let mut t = Table::new(header);
    for r in rows {
        t.rows.push(vec![
            r.device.clone(),
            format!("{:.2}", r.read_iops),
            format!("{:.2}", r.write_iops),
            format!("{:.2}", r.read_bw_bytes_s / MIB),
            format!("{:.2}", r.write_bw_bytes_s / MIB),
            format!("{:.2}", r.read_merges_s),
            format!("{:.2}", r.write_merges_s),
            format!("{:.2}", r.avg_request_bytes / 1024.0),
            format!("{:.2}", r.avg_queue),
            format!("{:.1}", r.read_await_s * 1e6),
            format!("{:.1}", r.write_await_s * 1e6),
            format!("{:.2}", r.util * 100.0),
        ]);
    }
    let mut s = String::new();
    t.render(&mut s);
    s
}
