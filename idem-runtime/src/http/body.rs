//! Bounded buffering. A request body is read whole (it is fingerprinted and
//! handed on) but only up to a limit; a response body is read up to the store
//! limit, and past it handed on unchanged — the part already read followed by
//! the rest — so a large response still completes without being held in memory
//! twice.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt;

/// The error type every body here converts to.
pub(super) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request body could not be buffered.
#[derive(Debug)]
pub(super) enum ReadError {
    /// Longer than the limit: 413.
    TooLarge,
    /// The client's stream failed: 400.
    Broken(BoxError),
}

/// Reads a request body of at most `limit` bytes.
pub(super) async fn buffer<B>(body: B, limit: usize) -> Result<Bytes, ReadError>
where
    B: HttpBody<Data = Bytes> + Send,
    B::Error: Into<BoxError>,
{
    if body.size_hint().lower() > limit as u64 {
        return Err(ReadError::TooLarge);
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(ReadError::TooLarge),
        Err(e) => Err(ReadError::Broken(e)),
    }
}

/// A response body, read up to the store limit.
pub(super) enum Collected {
    /// The whole body, within the limit: it can be stored.
    Whole(Bytes),
    /// The body cannot be stored: why, and the body to send as is.
    Passed(Unkept, Body),
}

/// Why a kept response's body was not stored (its status and headers are).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Unkept {
    /// Longer than the body limit.
    #[serde(rename = "over_limit")]
    OverLimit,
    /// The body's stream failed while it was read.
    #[serde(rename = "stream_failed")]
    StreamFailed,
    /// The body ended with trailers, which are not stored.
    #[serde(rename = "trailers")]
    Trailers,
}

/// Reads `body` while it stays within `limit` bytes.
pub(super) async fn collect<B>(body: B, limit: usize) -> Collected
where
    B: HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let mut body = Box::pin(body);
    if body.size_hint().lower() > limit as u64 {
        return Collected::Passed(Unkept::OverLimit, Body::new(body));
    }
    let mut read = BytesMut::new();
    loop {
        match body.frame().await {
            None => return Collected::Whole(read.freeze()),
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => {
                    read.extend_from_slice(&data);
                    if read.len() > limit {
                        let rest = Body::new(body);
                        let body = Body::new(Prefixed {
                            prefix: Some(read.freeze()),
                            rest,
                        });
                        return Collected::Passed(Unkept::OverLimit, body);
                    }
                }
                // Trailers are not stored; a body with trailers is passed on.
                Err(frame) => {
                    let rest = Body::new(body);
                    let trailers = Frame::trailers(frame.into_trailers().unwrap_or_default());
                    let body = Body::new(Prefixed {
                        prefix: Some(read.freeze()),
                        rest: Body::new(Chain(Some(trailers), rest)),
                    });
                    return Collected::Passed(Unkept::Trailers, body);
                }
            },
            Some(Err(e)) => {
                // The client gets what was read, then the failure.
                let e: BoxError = e.into();
                let body = Body::new(Prefixed {
                    prefix: Some(read.freeze()),
                    rest: Body::new(Failed(Some(e))),
                });
                return Collected::Passed(Unkept::StreamFailed, body);
            }
        }
    }
}

/// The bytes already read, then the rest of the body.
struct Prefixed {
    prefix: Option<Bytes>,
    rest: Body,
}

impl HttpBody for Prefixed {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(prefix) = self.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(prefix))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }

    fn size_hint(&self) -> SizeHint {
        let mut hint = self.rest.size_hint();
        let n = self.prefix.as_ref().map_or(0, |p| p.len() as u64);
        hint.set_lower(hint.lower() + n);
        if let Some(upper) = hint.upper() {
            hint.set_upper(upper + n);
        }
        hint
    }
}

/// One frame, then the rest.
struct Chain(Option<Frame<Bytes>>, Body);

impl HttpBody for Chain {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(frame) = self.0.take() {
            return Poll::Ready(Some(Ok(frame)));
        }
        Pin::new(&mut self.1).poll_frame(cx)
    }
}

/// A body whose read failed: the client sees the failure, not a truncated body.
pub(super) struct Failed(pub(super) Option<BoxError>);

impl HttpBody for Failed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.0.take().map(Err))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn limits() {
        let ok = buffer(Body::from("abc"), 3).await.unwrap();
        assert_eq!(&ok[..], b"abc");
        assert!(matches!(
            buffer(Body::from("abcd"), 3).await,
            Err(ReadError::TooLarge)
        ));
        let Collected::Whole(b) = collect(Body::from("abc"), 3).await else {
            panic!("within the limit")
        };
        assert_eq!(&b[..], b"abc");
        // A streamed body over the limit is passed on whole.
        let chunks = Chunks((0..4u8).map(|i| Bytes::from(vec![i; 2])).collect());
        let Collected::Passed(Unkept::OverLimit, rest) = collect(chunks, 3).await else {
            panic!("over the limit")
        };
        let all = rest.collect().await.unwrap().to_bytes();
        assert_eq!(&all[..], &[0, 0, 1, 1, 2, 2, 3, 3]);
    }

    /// A streamed body without a length.
    struct Chunks(std::collections::VecDeque<Bytes>);
    impl HttpBody for Chunks {
        type Data = Bytes;
        type Error = std::convert::Infallible;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }
}
