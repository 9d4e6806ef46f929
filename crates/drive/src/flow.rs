//! Running a flow's earlier steps (see [`firsttoken_plan::flow`]) on the
//! lane's slot, before its measured request: each step is sent whole on
//! the slot's connection (the first step of a fresh flow opens it), timed
//! from its start to its whole response, and its captures taken into the
//! flow's variables.

use std::time::Instant;

use firsttoken_plan::RequestTemplate;
use firsttoken_plan::flow::FlowStep;
use firsttoken_record::{ErrorKind, FlowStepTime, SampleError};

use crate::slot::Slot;

/// The variables of one flow: `prompt` and each captured value.
pub(crate) type Vars = Vec<(String, String)>;

/// Why a flow stopped before its measured request: the steps run so far
/// (the failed one last) and the error, the step named.
pub(crate) struct StepFailed {
    pub times: Vec<FlowStepTime>,
    pub error: SampleError,
}

/// Send `steps` in order on `slot`, each with `extra` headers (the trace
/// context) added and `{name}` filled from `vars`, capturing into `vars`.
/// A step fails on no response, a status outside 2xx or a capture not
/// found; what the request carries is scrubbed from the message.
pub(crate) async fn run_steps(
    slot: &mut Slot,
    steps: &[FlowStep],
    vars: &mut Vars,
    extra: &[(http::HeaderName, http::HeaderValue)],
) -> Result<Vec<FlowStepTime>, StepFailed> {
    let mut times = Vec::with_capacity(steps.len());
    for step in steps {
        let start = Instant::now();
        let fail = |times: &mut Vec<FlowStepTime>,
                    status: Option<u16>,
                    kind: ErrorKind,
                    message: String,
                    request: &RequestTemplate| {
            times.push(FlowStepTime {
                name: step.name.clone(),
                ms: ms_since(start),
                status,
            });
            StepFailed {
                times: std::mem::take(times),
                error: SampleError {
                    kind,
                    message: request.scrub(&format!("flow step {:?}: {message}", step.name)),
                },
            }
        };
        let mut request = match step.request.with_vars(vars) {
            Ok(r) => r,
            Err(e) => {
                return Err(fail(
                    &mut times,
                    None,
                    ErrorKind::Decode,
                    e.to_string(),
                    &step.request,
                ));
            }
        };
        request.headers.extend(extra.iter().cloned());
        let (status, headers, body) = match slot.whole(&request).await {
            Ok(r) => r,
            Err(f) => return Err(fail(&mut times, None, f.kind, f.message, &request)),
        };
        if !(200..300).contains(&status) {
            let text = String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned();
            return Err(fail(
                &mut times,
                Some(status),
                ErrorKind::HttpStatus,
                format!("HTTP {status}: {}", text.trim()),
                &request,
            ));
        }
        for c in &step.captures {
            match c.from.take(&headers, &body) {
                Ok(v) => {
                    vars.retain(|(k, _)| *k != c.var);
                    vars.push((c.var.clone(), v));
                }
                Err(m) => {
                    return Err(fail(
                        &mut times,
                        Some(status),
                        ErrorKind::Decode,
                        format!("{{{}}} not captured: {m}", c.var),
                        &request,
                    ));
                }
            }
        }
        times.push(FlowStepTime {
            name: step.name.clone(),
            ms: ms_since(start),
            status: Some(status),
        });
    }
    Ok(times)
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1000.0
}
