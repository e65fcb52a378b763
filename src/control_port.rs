//! Port 8082: the control API ([`crate::control`]) and, under `/api/v1`, the hosted service's
//! REST API ([`crate::hosted`]) on one listener. Neither surface knows of the other; this is
//! where they meet. Before either sees a request, the [browser rule](crate::browser) applies:
//! a foreign `Host` gets 421, a foreign page 403, in the route's own error shape. Which rule a
//! request gets is not decided here: the control API's route table says it for each route
//! (and for paths it does not have), and the hosted API gets the strictest; only a preflight
//! (`OPTIONS`), which is answered here, gets the strictest on every path. CORS headers go
//! only to the pages of `ALLOWED_ORIGINS`.

use std::sync::Arc;

use crate::app::App;
use crate::browser::{Guard, Refusal};
use crate::control::{self, ControlApi};
use crate::hosted::{self, HostedApi};
use crate::http::{Method, Reply, Request, Response, Service};

pub struct ControlPort {
    control: ControlApi,
    hosted: HostedApi,
    app: Arc<App>,
}

impl ControlPort {
    /// The control API's gate of requests waiting on an outbound call.
    pub fn outbound(&self) -> &crate::util::outbound::OutboundGate {
        self.control.outbound()
    }

    pub fn new(app: Arc<App>) -> ControlPort {
        ControlPort {
            hosted: HostedApi::new(Arc::clone(&app)),
            control: ControlApi::new(Arc::clone(&app)),
            app,
        }
    }
}

/// What the browser rule asks of a request on this port: what the control API's route table
/// says, but everything for the hosted API and for every preflight.
fn guard(method: Method, path: &str) -> Guard {
    if method == Method::Options || hosted::owns(path) {
        Guard::Full
    } else {
        control::guard(method, path)
    }
}

impl Service for ControlPort {
    /// The presence URL, the one write meant to face the internet, takes small bodies only (an
    /// OwnTracks message is under 2 KiB).
    fn body_limit(&self, path: &str) -> usize {
        if path.starts_with("/api/presence/") {
            control::PRESENCE_BODY_LIMIT
        } else {
            crate::http::BODY_LIMIT
        }
    }

    fn handle(&self, request: Request) -> Reply {
        let passed = match self
            .app
            .browsers()
            .check(&request, guard(request.method, &request.path))
        {
            Ok(passed) => passed,
            Err(refusal) => return Reply::Full(self.refused(&request, &refusal)),
        };
        let cors = passed.cors_headers();
        let reply = if request.method == Method::Options {
            Reply::Full(Response {
                status: 200,
                headers: passed.preflight_headers(),
                body: Vec::new(),
            })
        } else if hosted::owns(&request.path) {
            Reply::Full(self.hosted.handle(&request))
        } else {
            self.control.handle(request, &cors)
        };
        match reply {
            Reply::Full(mut r)
                if !cors.is_empty() && r.header("Access-Control-Allow-Origin").is_none() =>
            {
                r.headers.extend(cors);
                Reply::Full(r)
            }
            other => other,
        }
    }

    /// A body too large or unreadable, answered in the route's own error shape.
    fn refusal(&self, method: Method, path: &str, status: u16, message: &str) -> Response {
        if hosted::owns(path) {
            Response::error(status, message)
        } else {
            self.control.refusal(method, path, status, message)
        }
    }
}

impl ControlPort {
    /// A request the browser rule refused, in the route's own error shape; logged, since the
    /// person whose page or proxy it was may only see it there.
    fn refused(&self, request: &Request, refusal: &Refusal) -> Response {
        self.app.browsers().log("control port", request, refusal);
        self.refusal(
            request.method,
            &request.path,
            refusal.status(),
            &refusal.message(),
        )
    }
}
