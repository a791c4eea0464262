//! Typed access to one agent's settings ([`Reader`]): sizes, durations, choices and the
//! checks shared by every settings group, each error naming the setting it is about.

use std::time::Duration;

use super::super::settings::*;
use super::{check_name, NAME_HINT};
use crate::model::limits::*;
use crate::model::*;
use crate::units::{parse_duration, parse_size, UnitError};

/// Typed access to one agent's settings; every error names the setting it is about.
pub(crate) struct Reader<'a> {
    pub(super) settings: &'a Settings,
    /// The agent, e.g. `agent[2]`, for errors about inherited settings; empty for flags.
    pub(super) agent: &'a str,
}

pub(crate) type Found<'a, T> = Result<Option<(T, &'a Setting)>, JobError>;

impl<'a> Reader<'a> {
    pub(super) fn get(&self, key: &str) -> Option<&'a Setting> {
        self.settings.get(key)
    }

    pub(super) fn err(&self, s: &Setting, message: impl Into<String>, hint: Option<String>) -> JobError {
        let mut message = message.into();
        // A default is fine for one agent and wrong for another: say which.
        if s.inherited() && !self.agent.is_empty() {
            message.push_str(&format!(" (in {})", self.agent));
        }
        JobError { source: s.source.clone(), key: s.path.clone(), message, hint }
    }

    pub(super) fn unit_err(&self, s: &Setting, e: UnitError) -> JobError {
        self.err(
            s,
            format!("cannot read {:?} as a {}: {}", e.text, e.what, e.reason),
            Some(format!("e.g. {}", e.examples)),
        )
    }

    pub(super) fn expected(&self, s: &Setting, what: &str) -> JobError {
        self.err(s, format!("expected {what}, found {}", s.value.kind()), None)
    }

    pub(super) fn read<T>(
        &self,
        key: &str,
        f: impl FnOnce(&'a Setting) -> Result<T, JobError>,
    ) -> Found<'a, T> {
        self.get(key).map(|s| f(s).map(|v| (v, s))).transpose()
    }

    pub(super) fn string(&self, key: &str) -> Found<'a, &'a str> {
        self.read(key, |s| match &s.value {
            Raw::Str(v) => Ok(v.as_str()),
            _ => Err(self.expected(s, "a string")),
        })
    }

    pub(super) fn choice(&self, key: &str, valid: &[&str]) -> Found<'a, &'a str> {
        let Some((v, s)) = self.string(key)? else { return Ok(None) };
        if valid.contains(&v) {
            return Ok(Some((v, s)));
        }
        let hint = match suggest(v, valid) {
            Some(k) => format!("did you mean \"{k}\"? valid values: {}", quoted(valid)),
            None => format!("valid values: {}", quoted(valid)),
        };
        Err(self.err(s, format!("unknown {} \"{v}\"", s.key()), Some(hint)))
    }

    pub(super) fn size_of(&self, s: &Setting) -> Result<u64, JobError> {
        let n = match &s.value {
            Raw::Int(i) => u64::try_from(*i)
                .map_err(|_| self.err(s, format!("a size cannot be negative, found {i}"), None))?,
            Raw::Str(t) => parse_size(t).map_err(|e| self.unit_err(s, e))?,
            _ => return Err(self.expected(s, "a size like \"4k\"")),
        };
        if n > MAX_OFFSET {
            return Err(self.err(
                s,
                format!("{} is too large: {n} bytes is past the largest file offset", s.value.describe()),
                Some(format!(
                    "sizes must fit a signed 64-bit file offset: at most {MAX_OFFSET} bytes (8EiB - 1)"
                )),
            ));
        }
        Ok(n)
    }

    pub(super) fn size(&self, key: &str) -> Found<'a, u64> {
        self.read(key, |s| self.size_of(s))
    }

    /// A positive size.
    pub(super) fn nonzero_size(&self, key: &str) -> Found<'a, u64> {
        match self.size(key)? {
            Some((0, s)) => Err(self.err(s, format!("{} must be positive", s.name()), None)),
            found => Ok(found),
        }
    }

    pub(super) fn duration(&self, key: &str) -> Found<'a, Duration> {
        self.read(key, |s| {
            let hint = || Some("e.g. \"500ms\", \"10s\", \"2h\"; at most 366 days".to_string());
            let negative = || self.err(s, "a duration cannot be negative", hint());
            let d = match &s.value {
                Raw::Int(i) => u64::try_from(*i).map(Duration::from_secs).map_err(|_| negative())?,
                Raw::Float(v) if *v < 0.0 => return Err(negative()),
                Raw::Float(v) => Duration::try_from_secs_f64(*v)
                    .map_err(|_| self.err(s, format!("{v} is not a usable number of seconds"), hint()))?,
                Raw::Str(t) => parse_duration(t).map_err(|e| self.unit_err(s, e))?,
                Raw::Bool(_) => return Err(self.expected(s, "a duration like \"10s\"")),
            };
            if d > MAX_DURATION {
                return Err(self.err(s, format!("{} is longer than a year", s.value.describe()), hint()));
            }
            Ok(d)
        })
    }

    /// A job or agent name: it becomes part of file and thread names, and shows in reports.
    pub(super) fn name(&self, s: &Setting, text: &str) -> Result<(), JobError> {
        check_name(text).map_err(|why| self.err(s, why, Some(NAME_HINT.into())))
    }

    pub(super) fn float(&self, key: &str) -> Found<'a, f64> {
        self.read(key, |s| {
            let v = match &s.value {
                Raw::Int(i) => *i as f64,
                Raw::Float(v) => *v,
                Raw::Str(t) => t
                    .trim()
                    .parse()
                    .map_err(|_| self.err(s, format!("expected a number, found \"{t}\""), None))?,
                Raw::Bool(_) => return Err(self.expected(s, "a number")),
            };
            if v.is_finite() {
                Ok(v)
            } else {
                Err(self.err(s, format!("expected a finite number, found {v}"), None))
            }
        })
    }

    pub(super) fn uint(&self, key: &str) -> Found<'a, u64> {
        self.read(key, |s| {
            let value = match &s.value {
                Raw::Int(i) => u64::try_from(*i).ok(),
                Raw::Str(t) => t.trim().parse().ok(),
                _ => None,
            };
            value.ok_or_else(|| {
                self.err(s, format!("expected a non-negative integer, found {}", s.value.describe()), None)
            })
        })
    }

    pub(super) fn boolean(&self, key: &str) -> Found<'a, bool> {
        self.read(key, |s| match &s.value {
            Raw::Bool(b) => Ok(*b),
            other => Err(self.err(s, format!("expected true or false, found {}", other.describe()), None)),
        })
    }

    /// Rejects a setting the agent itself gives (not one inherited from `[defaults]`, which may
    /// serve other agents) when it would have no effect: that is almost always a mistake.
    pub(super) fn unused(
        &self,
        key: &str,
        applies: bool,
        why: &str,
        hint: impl FnOnce(&Setting) -> String,
    ) -> Result<(), JobError> {
        match self.get(key) {
            Some(s) if !applies && !s.inherited() => {
                Err(self.err(s, format!("{} has no effect here: {why}", s.name()), Some(hint(s))))
            }
            _ => Ok(()),
        }
    }

    /// Settles `op` or `pattern` against what `rw` implies: an agent's own setting beats an
    /// inherited one, and two at the same level must agree.
    pub(super) fn pick(
        &self,
        given: Option<(&'a str, &'a Setting)>,
        implied: Option<(&'a str, &'a Setting)>,
        fits: impl Fn(&str, &str) -> bool,
    ) -> Result<Option<(&'a str, &'a Setting)>, JobError> {
        match (given, implied) {
            (Some(g), Some(i)) if g.1.inherited() == i.1.inherited() => {
                if fits(g.0, i.0) {
                    Ok(Some(g))
                } else {
                    Err(self.err(
                        g.1,
                        format!("{} = \"{}\" conflicts with rw = {}", g.1.key(), g.0, i.1.value.describe()),
                        Some("give either rw, or op and pattern".into()),
                    ))
                }
            }
            (Some(g), Some(i)) => Ok(Some(if g.1.inherited() { i } else { g })),
            (g, i) => Ok(g.or(i)),
        }
    }

    /// `bs`: one size, or a weighted list "4k:70,64k:30".
    pub(super) fn sizes(&self) -> Found<'a, SizeSpec> {
        self.read("bs", |s| {
            let text = match &s.value {
                Raw::Str(t) if t.contains(':') || t.contains(',') => t,
                _ => return self.size_of(s).map(SizeSpec::Fixed),
            };
            let mut list = Vec::new();
            for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                let (size, weight) = part.split_once(':').ok_or_else(|| {
                    self.err(
                        s,
                        format!("\"{part}\" in a weighted list has no weight"),
                        Some("write size:weight pairs, e.g. \"4k:70,64k:30\"".into()),
                    )
                })?;
                let size = parse_size(size).map_err(|e| self.unit_err(s, e))?;
                let weight = weight.trim().parse::<u32>().map_err(|_| {
                    self.err(s, format!("weight \"{}\" is not a whole number", weight.trim()), None)
                })?;
                list.push((size, weight));
            }
            if list.iter().all(|(_, w)| *w == 0) {
                return Err(self.err(s, "a weighted list needs at least one positive weight", None));
            }
            Ok(SizeSpec::Weighted(list))
        })
    }
}
