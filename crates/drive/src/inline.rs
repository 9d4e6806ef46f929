//! hyper's HTTP/2 client run inside the request's own task.
//!
//! hyper's HTTP/2 client hands futures to its executor: the connection's
//! I/O, each request's wait for its response, a request body still being
//! sent. Spawned on tokio, each is a task of its own, and every step of a
//! request (its HEADERS written, its response handed back) waits for
//! another task's turn behind every other ready task: with hundreds of
//! streams, milliseconds between the request's start and its write, and
//! wake-ups between tasks on every frame. [`InlineExec`] keeps those
//! futures instead, and [`H2Driver`] polls them with hyper's client future
//! inside the one future the request's task already drives
//! (`Conn::drive`), as HTTP/1.1's connection is: the socket is read and
//! written, and the frames reach the request, in the same poll.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

/// A future hyper handed over.
type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Rounds of one poll: a future handed over in one round (the connection
/// task, a request's response future) is first polled in the next, so a
/// request goes from queued to written within one poll.
const ROUNDS: usize = 4;

/// An executor that keeps what it is given for [`H2Driver`] to poll.
#[derive(Clone, Default)]
pub(crate) struct InlineExec(Arc<Mutex<Vec<Task>>>);

impl InlineExec {
    fn take(&self) -> Vec<Task> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn queued(&self) -> bool {
        !self.0.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }
}

impl<F> hyper::rt::Executor<F> for InlineExec
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, fut: F) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::pin(fut));
    }
}

/// hyper's HTTP/2 client future with every future it handed to its
/// [`InlineExec`]: ready when the client future is (the connection ended).
pub(crate) struct H2Driver<C> {
    client: Pin<Box<C>>,
    exec: InlineExec,
    tasks: Vec<Task>,
}

impl<C> H2Driver<C> {
    /// Drive `client`, whose handshake was given `exec`.
    pub(crate) fn new(client: C, exec: InlineExec) -> H2Driver<C> {
        H2Driver {
            client: Box::pin(client),
            exec,
            tasks: Vec::new(),
        }
    }
}

impl<C, E> Future for H2Driver<C>
where
    C: Future<Output = Result<(), E>>,
{
    type Output = Result<(), E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        for _ in 0..ROUNDS {
            if let Poll::Ready(out) = this.client.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            let mut new = this.exec.take();
            let handed = !new.is_empty();
            this.tasks.append(&mut new);
            this.tasks.retain_mut(|t| t.as_mut().poll(cx).is_pending());
            if !handed && !this.exec.queued() {
                break;
            }
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Executor;

    #[tokio::test]
    async fn handed_futures_run_inside_the_driver_and_it_ends_with_the_client() {
        let exec = InlineExec::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let inner = exec.clone();
        // The client hands over a future on its first poll, then waits for
        // what that future sends.
        let mut rx = rx;
        let mut tx = Some(tx);
        let client = std::future::poll_fn(move |cx| {
            if let Some(tx) = tx.take() {
                inner.execute(async move {
                    let _ = tx.send(7);
                });
            }
            match Pin::new(&mut rx).poll(cx) {
                Poll::Ready(Ok(7)) => Poll::Ready(Ok(())),
                Poll::Ready(_) => Poll::Ready(Err(())),
                Poll::Pending => Poll::Pending,
            }
        });
        let mut driver = H2Driver::new(client, exec);
        // One poll: the handed future runs in round two, the client sees its
        // value in round three; nothing was spawned.
        let out = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut driver).poll(cx))).await;
        assert_eq!(out, Poll::Ready(Ok(())));
    }
}
