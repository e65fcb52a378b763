//! Fake upstreams for the rule that outbound calls follow no redirects: one that answers every
//! request `302 Found` pointing at another server ([`Upstream::redirecting`]), and one there
//! (on another loopback address) that answers 200 ([`Upstream::counting`]); each counts the
//! requests it answers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hearth::http::{self, Reply, Request, Response, Served};

/// A server answering every request with `reply`, counting them.
pub struct Upstream {
    served: Served,
    asked: Arc<AtomicUsize>,
}

impl Upstream {
    fn serve(
        name: &'static str,
        at: SocketAddr,
        reply: impl Fn(&Request) -> Response + Send + Sync + 'static,
    ) -> Upstream {
        super::share_process();
        let asked = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&asked);
        let served = http::serve(name, at, move |req: Request| {
            count.fetch_add(1, Ordering::SeqCst);
            Reply::Full(reply(&req))
        })
        .unwrap();
        Upstream { served, asked }
    }

    /// Answers every request `302 Found` with `Location: <to><path>?<query>` and a JSON object
    /// body (which a client that took any answer as success would pass on).
    pub fn redirecting(at: SocketAddr, to: String, body: &'static str) -> Upstream {
        Self::serve("redirector", at, move |req| {
            let location = match req.query.as_str() {
                "" => format!("{to}{}", req.path),
                query => format!("{to}{}?{query}", req.path),
            };
            Response {
                status: 302,
                headers: vec![
                    ("Location".into(), location),
                    ("Content-Type".into(), "application/json".into()),
                ],
                body: body.as_bytes().to_vec(),
            }
        })
    }

    /// Answers every request `200` with `body`: where a followed redirect would land.
    pub fn counting(at: SocketAddr, body: &'static str) -> Upstream {
        Self::serve("redirect-target", at, move |_| {
            Response::json_bytes(200, body.as_bytes().to_vec())
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.served.addr()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// Requests it answered.
    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}
