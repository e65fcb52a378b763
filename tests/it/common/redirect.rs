//! Fake upstreams for the rule that outbound calls follow no redirects: a [`Redirector`] that
//! answers every request `302 Found` pointing at another server, and a [`Counter`] there (on
//! another loopback address) that counts what reaches it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hearth::http::{self, Reply, Request, Response, Served};

/// Answers every request `302 Found` with `Location: <to><path>?<query>` and a JSON object
/// body (which a client that took any answer as success would pass on), counting them.
pub struct Redirector {
    served: Served,
    asked: Arc<AtomicUsize>,
}

impl Redirector {
    pub fn start(at: SocketAddr, to: String, body: &'static str) -> Redirector {
        super::share_process();
        let asked = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&asked);
        let served = http::serve("redirector", at, move |req: Request| {
            count.fetch_add(1, Ordering::SeqCst);
            let location = match req.query.as_str() {
                "" => format!("{to}{}", req.path),
                query => format!("{to}{}?{query}", req.path),
            };
            Reply::Full(Response {
                status: 302,
                headers: vec![
                    ("Location".into(), location),
                    ("Content-Type".into(), "application/json".into()),
                ],
                body: body.as_bytes().to_vec(),
            })
        })
        .unwrap();
        Redirector { served, asked }
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

/// Answers every request `200` with `body`, counting them: where a followed redirect would
/// land.
pub struct Counter {
    served: Served,
    asked: Arc<AtomicUsize>,
}

impl Counter {
    pub fn start(at: SocketAddr, body: &'static str) -> Counter {
        super::share_process();
        let asked = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&asked);
        let served = http::serve("redirect-target", at, move |_: Request| {
            count.fetch_add(1, Ordering::SeqCst);
            Reply::Full(Response::json_bytes(200, body.as_bytes().to_vec()))
        })
        .unwrap();
        Counter { served, asked }
    }

    pub fn addr(&self) -> SocketAddr {
        self.served.addr()
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr())
    }

    pub fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}
