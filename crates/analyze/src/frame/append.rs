//! Joining two builders' rows: a frame filled in parts at once (each part
//! a clone of one builder, fed a later range of rows) is the frame one
//! builder fed every row would have made.

use super::{FrameBuilder, NONE, Obs};

/// Rows moved at a time by [`FrameBuilder::append`].
const APPEND_CHUNK: usize = 1 << 16;

impl FrameBuilder {
    /// Adds `later`'s rows after this builder's, as if they had been
    /// pushed here: `later` is a clone of this builder's empty self fed the
    /// rows that follow, or a builder of some of the same sessions (one
    /// session's frame, read or stored on its own). Its strings,
    /// Server-Timing lists and sessions are found here by value (a session
    /// new here is added without labels) and its row numbers shifted.
    pub fn append(&mut self, later: FrameBuilder) {
        let offset = self.obs.len() as u32;
        let timing_offset = self.timings.len() as u32;
        let strings: Vec<u32> = later.strings.iter().map(|s| self.intern(s)).collect();
        let string = |id: u32| {
            if id == NONE {
                NONE
            } else {
                strings[id as usize]
            }
        };
        let shapes: Vec<u32> = later
            .shapes
            .iter()
            .map(|names| {
                let names: Vec<u32> = names.iter().map(|&n| string(n)).collect();
                self.shape(&names)
            })
            .collect();
        let sessions: Vec<u32> = later
            .frame
            .sessions
            .iter()
            .map(|s| self.session(&s.id))
            .collect();
        let renumber = |o: &mut Obs| {
            o.session = sessions[o.session as usize];
            o.path = string(o.path);
            o.strategy = string(o.strategy);
            o.provider = string(o.provider);
            o.route = string(o.route);
            o.prompt = string(o.prompt);
            o.timing_start += timing_offset;
            if o.timing_shape != NONE {
                o.timing_shape = shapes[o.timing_shape as usize];
            }
        };
        if self.obs.is_empty() && self.timings.is_empty() {
            // Nothing here yet: `later`'s rows are taken as they lie and
            // renumbered in place (a million-row session's frame is not
            // copied).
            self.timings = later.timings;
            self.obs = later.obs;
            self.obs.iter_mut().for_each(renumber);
        } else {
            self.timings.extend_from_slice(&later.timings);
            // Moved a chunk at a time, the rest of `later`'s rows shrunk
            // after each, so the two builders' rows never take twice their
            // memory.
            let mut rest = later.obs;
            while !rest.is_empty() {
                let chunk = rest.len().min(APPEND_CHUNK);
                self.obs.extend(rest.drain(..chunk).map(|mut o| {
                    renumber(&mut o);
                    o
                }));
                rest.shrink_to_fit();
            }
        }
        for mut f in later.flows {
            f.row += offset;
            for step in &mut f.steps {
                step.0 = string(step.0);
            }
            self.flows.push(f);
        }
        self.turns.extend(later.turns.into_iter().map(|mut t| {
            t.row += offset;
            t
        }));
        for (mine, theirs) in self.frame.index.iter_mut().zip(later.frame.index) {
            mine.extend(theirs.into_iter().map(|i| i + offset));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use firsttoken_record::session::Provenance::Measured;
    use firsttoken_record::session::SampleRow;

    use super::super::Frame;
    use crate::FrameBuilder;
    use crate::testutil::{meta, row};

    /// A frame as its rows' observable content: every row's fields with
    /// strings resolved, the index lists, the flow and turn rows.
    pub(crate) fn content(f: &Frame) -> String {
        let rows: Vec<String> = f
            .obs
            .iter()
            .map(|o| {
                let names: Vec<&str> = if o.timing_shape == super::NONE {
                    Vec::new()
                } else {
                    f.timing_shapes[o.timing_shape as usize]
                        .iter()
                        .map(|&n| f.str(n).unwrap_or("?"))
                        .collect()
                };
                let values: Vec<f64> = (0..names.len())
                    .map(|k| f.timings[o.timing_start as usize + k])
                    .collect();
                format!(
                    "{} {} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {} {}",
                    f.session_id(o),
                    o.seq,
                    f.str(o.path),
                    f.str(o.strategy),
                    f.str(o.provider),
                    f.str(o.route),
                    f.str(o.prompt),
                    names,
                    values,
                    o.ttft,
                    o.phase.as_str(),
                )
            })
            .collect();
        let flows: Vec<String> = f
            .flows
            .iter()
            .map(|r| {
                let steps: Vec<(&str, f64)> = r
                    .steps
                    .iter()
                    .map(|&(n, ms)| (f.str(n).unwrap_or("?"), ms))
                    .collect();
                format!("{} {steps:?}", r.row)
            })
            .collect();
        format!("{rows:#?}\n{:?}\n{flows:?}\n{:?}", f.index, f.turns)
    }

    /// Rows of two sessions whose later rows bring strings, Server-Timing
    /// lists, flow steps and turns the earlier ones do not have.
    pub(crate) fn rows() -> Vec<SampleRow> {
        let mut out = Vec::new();
        for i in 0..12u64 {
            let session = if i < 7 { "a" } else { "b" };
            let path = ["chat", "docs", "search"][(i % 3) as usize];
            let mut r = row(
                session,
                if i % 4 == 0 { "fresh" } else { "warm" },
                Some(path),
                Some(100.0 + i as f64),
            );
            r.sample.seq = i;
            r.actual_start_ms = i as f64;
            r.sample.provider = (i >= 5).then(|| format!("p{}", i % 2));
            r.sample.route = Some(format!("route-{}", i % 5));
            let timing = if i < 6 {
                vec![("db", 1.0)]
            } else {
                vec![("llm", 2.0), ("db", 3.0)]
            };
            r.sample.server_timing = Some(
                timing
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v + i as f64))
                    .collect(),
            );
            if i % 5 == 4 {
                r.sample.flow_wait_ms = Some(5.0);
                r.sample.flow_steps = Some(vec![firsttoken_record::FlowStepTime {
                    name: format!("step{}", i % 3),
                    ms: 1.5,
                    status: Some(200),
                }]);
            }
            if i >= 9 {
                r.sample.turn = Some(i as u32 - 8);
            }
            out.push(r);
        }
        out
    }

    #[test]
    fn a_frame_filled_in_parts_is_the_frame_filled_at_once() {
        let sessions = [meta("a", Measured), meta("b", Measured)];
        let rows = rows();
        let mut whole = FrameBuilder::new(&sessions).unwrap();
        for r in &rows {
            whole.push(r).unwrap();
        }
        let whole = content(&whole.finish());
        for cut in [0, 1, 5, 6, 9, 12] {
            let empty = FrameBuilder::new(&sessions).unwrap();
            let (mut first, mut later) = (empty.clone(), empty);
            for r in &rows[..cut] {
                first.push(r).unwrap();
            }
            for r in &rows[cut..] {
                later.push(r).unwrap();
            }
            first.append(later);
            assert_eq!(content(&first.finish()), whole, "cut at {cut}");
        }
    }
}
