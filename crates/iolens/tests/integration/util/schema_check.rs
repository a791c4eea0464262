//! A JSON Schema (draft 2020-12) validator for the subset the files in `schemas/` use: `type`
//! (one or a list), `required`, `properties`, `additionalProperties` (a boolean or a schema),
//! `items`, `enum`, `const`, `minimum`, `allOf`, `anyOf`, and `$ref` to a sibling file
//! (`run.schema.json`), to a part of one (`envelope.schema.json#/$defs/lat_ns`) or to a part
//! of the same file (`#/$defs/x`). Any other keyword is refused, so a schema cannot silently
//! ask for more than is checked.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

const KNOWN: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "required",
    "properties",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "allOf",
    "anyOf",
];

pub struct Schemas {
    dir: PathBuf,
    files: HashMap<String, Value>,
}

impl Schemas {
    pub fn new(dir: &Path) -> Schemas {
        Schemas { dir: dir.to_path_buf(), files: HashMap::new() }
    }

    fn file(&mut self, name: &str) -> Value {
        if let Some(v) = self.files.get(name) {
            return v.clone();
        }
        let path = self.dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        self.files.insert(name.to_string(), v.clone());
        v
    }

    /// Every place where `doc` breaks the schema in file `name`, as "path: what".
    pub fn validate(&mut self, name: &str, doc: &Value) -> Vec<String> {
        let schema = self.file(name);
        let mut errors = Vec::new();
        self.check(name, &schema, doc, "$", &mut errors);
        errors
    }

    fn resolve(&mut self, file: &str, reference: &str) -> (String, Value) {
        let (target_file, pointer) = match reference.split_once('#') {
            Some(("", p)) => (file.to_string(), p.to_string()),
            Some((f, p)) => (f.to_string(), p.to_string()),
            None => (reference.to_string(), String::new()),
        };
        let doc = self.file(&target_file);
        let part =
            doc.pointer(&pointer).unwrap_or_else(|| panic!("{file}: $ref {reference} leads nowhere")).clone();
        (target_file, part)
    }

    fn check(&mut self, file: &str, schema: &Value, v: &Value, at: &str, errors: &mut Vec<String>) {
        let Some(s) = schema.as_object() else {
            if schema == &Value::Bool(false) {
                errors.push(format!("{at}: not allowed here"));
            }
            return;
        };
        for key in s.keys() {
            assert!(KNOWN.contains(&key.as_str()), "{file}: keyword {key} is not checked by this validator");
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let (f, part) = self.resolve(file, r);
            self.check(&f, &part, v, at, errors);
        }
        for sub in s.get("allOf").and_then(Value::as_array).into_iter().flatten() {
            self.check(file, sub, v, at, errors);
        }
        if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
            let mut all = Vec::new();
            let fits = any.iter().any(|sub| {
                let mut e = Vec::new();
                self.check(file, sub, v, at, &mut e);
                all.extend(e.iter().cloned());
                e.is_empty()
            });
            if !fits {
                errors.push(format!("{at}: fits none of anyOf ({})", all.join("; ")));
            }
        }
        if let Some(t) = s.get("type") {
            let types: Vec<&str> = match t {
                Value::String(one) => vec![one.as_str()],
                Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
                _ => panic!("{file}: bad type {t}"),
            };
            if !types.iter().any(|t| is_type(v, t)) {
                errors.push(format!("{at}: expected {types:?}, found {}", short(v)));
                return;
            }
        }
        if let Some(options) = s.get("enum").and_then(Value::as_array) {
            if !options.contains(v) {
                errors.push(format!("{at}: {} is not one of {options:?}", short(v)));
            }
        }
        if let Some(c) = s.get("const") {
            if c != v {
                errors.push(format!("{at}: expected {c}, found {}", short(v)));
            }
        }
        if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
            if x < min {
                errors.push(format!("{at}: {x} is below {min}"));
            }
        }
        if let Some(o) = v.as_object() {
            for key in s.get("required").and_then(Value::as_array).into_iter().flatten() {
                let key = key.as_str().expect("required names are strings");
                if !o.contains_key(key) {
                    errors.push(format!("{at}: missing {key}"));
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (key, value) in o {
                let here = format!("{at}.{key}");
                match props.and_then(|p| p.get(key)) {
                    Some(sub) => self.check(file, sub, value, &here, errors),
                    None => match s.get("additionalProperties") {
                        Some(Value::Bool(false)) => errors.push(format!("{here}: not in the schema")),
                        Some(sub @ Value::Object(_)) => self.check(file, sub, value, &here, errors),
                        _ => {}
                    },
                }
            }
        }
        if let (Some(items), Some(list)) = (s.get("items"), v.as_array()) {
            for (i, x) in list.iter().enumerate() {
                self.check(file, items, x, &format!("{at}[{i}]"), errors);
            }
        }
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64(),
        other => panic!("unknown type {other}"),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 60 {
        format!("{}…", &s[..s.char_indices().nth(60).map_or(s.len(), |(i, _)| i)])
    } else {
        s
    }
}
