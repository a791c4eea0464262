//! The terminal report of a b_eff_io result: per partition the method and type values, then the
//! protocol of the best partition.

use iolens_workload::format_bytes;

use iolens_suites::beff_io::{overran_schedule, BeffIoResult, Method};

use super::table::Table;

pub fn render(r: &BeffIoResult) -> String {
    let mut out = format!(
        "b_eff_io {} (T = {:.0} s per partition, MPART = {}; ranks are {}):\n",
        r.dir,
        r.time_s,
        format_bytes(r.mpart),
        r.ranks_are
    );
    if let Some(mpi) = &r.mpi {
        let hints: Vec<String> = mpi.hints.iter().map(|(k, v)| format!("{k}={v}")).collect();
        out.push_str(&format!(
            "MPI-IO: {} on {}; hints: {}\n",
            mpi.library,
            mpi.hosts.join(", "),
            if hints.is_empty() { "none".to_string() } else { hints.join(" ") }
        ));
    }
    for p in &r.partitions {
        out.push_str(&format!(
            "\n{} ranks: b_eff_io {:.1} MB/s ({:.1} s for T = {:.1} s: {})\n",
            p.ranks,
            p.b_eff_io,
            p.elapsed_s,
            p.scheduled_s,
            if p.schedule_held {
                "T held"
            } else if overran_schedule(p.elapsed_s, p.scheduled_s) {
                "T not held: overran"
            } else {
                "T not held: ended early"
            }
        ));
        if let Some(note) = &p.schedule_note {
            out.push_str(&format!("  {note}\n"));
        }
        let mut t = Table::new(vec![
            "method", "weight", "type 0", "type 1", "type 2", "type 3", "type 4", "MB/s", "moved",
        ]);
        for m in &p.methods {
            let mut row = vec![m.method.name().to_string(), format!("{:.0}%", m.weight * 100.0)];
            for ty in 0..=4u8 {
                let v = p.types.iter().find(|t| t.method == m.method && t.pattern_type == ty);
                row.push(v.map_or("-".into(), |t| format!("{:.1}", t.bw_mb_s)));
            }
            row.push(format!("{:.1}", m.bw_mb_s));
            row.push(format_bytes(m.bytes));
            t.rows.push(row);
        }
        t.render(&mut out);
    }
    if let Some(p) = r.partitions.iter().find(|p| p.ranks == r.best_ranks) {
        out.push_str("\ncalls per pattern type (write and rewrite / read):\n");
        for ty in 0..=4u8 {
            let call =
                |m: Method| p.types.iter().find(|t| t.pattern_type == ty && t.method == m).map(|t| &t.call);
            if let (Some(w), Some(rd)) = (call(Method::Write), call(Method::Read)) {
                out.push_str(&format!("  type {ty}: {w} / {rd}\n"));
            }
        }
        out.push_str(&format!("\nprotocol of the best partition ({} ranks), MB/s per pattern:\n", p.ranks));
        let mut t =
            Table::new(vec!["no", "type", "l", "L", "U", "write", "rewrite", "read", "calls/rank (write)"]);
        let numbers: Vec<u32> =
            p.patterns.iter().filter(|x| x.method == Method::Write).map(|x| x.number).collect();
        for no in numbers {
            let of = |m: Method| p.patterns.iter().find(|x| x.method == m && x.number == no);
            let Some(w) = of(Method::Write) else { continue };
            let cell = |m: Method| of(m).map_or("-".into(), |x| format!("{:.1}", x.bw_mb_s));
            let (l, big_l) = if w.chunk == 0 {
                ("fill".to_string(), String::new())
            } else {
                (format_bytes(w.chunk), format_bytes(w.memory))
            };
            t.rows.push(vec![
                no.to_string(),
                w.pattern_type.to_string(),
                l,
                big_l,
                w.units.to_string(),
                cell(Method::Write),
                cell(Method::Rewrite),
                cell(Method::Read),
                w.calls.to_string(),
            ]);
        }
        t.render(&mut out);
        let notes: Vec<String> = p
            .patterns
            .iter()
            .filter_map(|x| x.note.as_ref().map(|n| format!("  {} {}: {n}\n", x.method.name(), x.number)))
            .collect();
        if !notes.is_empty() {
            out.push_str("schedule (pattern number: why its time differs from its share of T):\n");
            out.extend(notes);
        }
    }
    out.push_str(&format!(
        "\nb_eff_io = {:.1} MB/s (max over partitions, best at {} ranks; MB = 10^6 bytes)\n\
         coffee cup: writing this node's memory ({}) at b_eff_io takes {:.0} s\n",
        r.b_eff_io,
        r.best_ranks,
        format_bytes(r.memory),
        r.coffee_cup_s
    ));
    for w in &r.warnings {
        out.push_str(&format!("warning [{}]: {}\n", w.code.as_str(), w.message));
    }
    out
}
