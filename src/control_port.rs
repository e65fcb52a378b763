//! Port 8082: the control API ([`crate::control`]) and, under `/api/v1`, the hosted service's
//! REST API ([`crate::hosted`]) on one listener. Neither surface knows of the other; this is
//! where they meet. Every answer carries the Python server's CORS headers, and any `OPTIONS`
//! request is answered 200 before routing.

use std::sync::Arc;

use crate::app::App;
use crate::control::ControlApi;
use crate::hosted::{self, HostedApi};
use crate::http::{Method, Reply, Request, Response, Service};

pub struct ControlPort {
    control: ControlApi,
    hosted: HostedApi,
}

impl ControlPort {
    pub fn new(app: Arc<App>) -> ControlPort {
        ControlPort {
            hosted: HostedApi::new(Arc::clone(&app)),
            control: ControlApi::new(app),
        }
    }
}

fn cors_headers() -> [(String, String); 3] {
    [
        ("Access-Control-Allow-Origin", "*"),
        (
            "Access-Control-Allow-Methods",
            "GET, POST, PUT, DELETE, OPTIONS",
        ),
        (
            "Access-Control-Allow-Headers",
            "Content-Type, Authorization, X-API-Key",
        ),
    ]
    .map(|(n, v)| (n.to_string(), v.to_string()))
}

impl Service for ControlPort {
    fn handle(&self, request: Request) -> Reply {
        let reply = if request.method == Method::Options {
            Reply::Full(Response {
                status: 200,
                headers: Vec::new(),
                body: Vec::new(),
            })
        } else if hosted::owns(&request.path) {
            Reply::Full(self.hosted.handle(&request))
        } else {
            self.control.handle(request, &cors_headers())
        };
        match reply {
            Reply::Full(mut r) => {
                r.headers.extend(cors_headers());
                Reply::Full(r)
            }
            other => other,
        }
    }

    /// A body too large or unreadable, answered in the route's own error shape with the CORS
    /// headers.
    fn refusal(&self, method: Method, path: &str, status: u16, message: &str) -> Response {
        let mut response = if hosted::owns(path) {
            Response::error(status, message)
        } else {
            self.control.refusal(method, path, status, message)
        };
        response.headers.extend(cors_headers());
        response
    }
}
