//! The control API (port 8082). This issue serves `/health` and `/info`; commands, status,
//! live events and claiming arrive with the control-API issue.

use std::sync::Arc;

use crate::app::App;
use crate::http::{Method, Reply, Request, Response, Service};
use crate::info;

pub struct ControlApi {
    app: Arc<App>,
}

impl ControlApi {
    pub fn new(app: Arc<App>) -> ControlApi {
        ControlApi { app }
    }
}

impl Service for ControlApi {
    fn handle(&self, request: Request) -> Reply {
        let get = matches!(request.method, Method::Get | Method::Head);
        Reply::Full(match (request.path.as_str(), get) {
            ("/health", true) => info::health(),
            ("/info", true) => info::info(&self.app),
            ("/health" | "/info", false) => Response::error(405, "Method not allowed"),
            _ => Response::error(404, "Not found"),
        })
    }
}
