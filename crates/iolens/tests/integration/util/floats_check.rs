//! Figures the schemas call `number` that must also be JSON floats (`0.0`, never `0`), which a
//! JSON Schema cannot say: shared by the contract and the MPI tests.

use serde_json::Value;

/// The CPU figures (`cpu.user_s`, `cpu.sys_s`, `cpu.per_op_ns`) are JSON floats wherever a
/// `cpu` object appears in `v` (aggregate, agents, ranks), even when whole, so a reader types
/// them once.
pub fn cpu_figures_are_floats(v: &Value, schema: &str) {
    match v {
        Value::Object(o) => {
            if let Some(cpu) = o.get("cpu").and_then(Value::as_object) {
                for key in ["user_s", "sys_s", "per_op_ns"] {
                    if let Some(x) = cpu.get(key) {
                        assert!(x.is_f64(), "{schema}: cpu.{key} = {x} is not a float");
                    }
                }
            }
            o.values().for_each(|x| cpu_figures_are_floats(x, schema));
        }
        Value::Array(a) => a.iter().for_each(|x| cpu_figures_are_floats(x, schema)),
        _ => {}
    }
}
