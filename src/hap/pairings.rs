//! `POST /pairings`: an admin controller adds, removes and lists pairings (HAP methods 3, 4
//! and 5). Anyone else is refused with `Authentication` and nothing changes.
//!
//! Removing the last admin removes every pairing, as HAP requires (an accessory with only
//! regular controllers left could never be administered again): it is unpaired, and pair-setup
//! with the code is open again.

use super::identity::{Identity, IdentityError, Pairing};
use super::tlv::{Tlv, TlvError, error, kind};

const ADD: u8 = 3;
const REMOVE: u8 = 4;
const LIST: u8 = 5;

/// What a `/pairings` request did: its reply, and the controllers whose pairing it removed
/// (their open sessions must be closed).
#[derive(Debug)]
pub struct Outcome {
    pub reply: Tlv,
    pub removed: Vec<String>,
}

fn reply(tlv: Tlv) -> Outcome {
    Outcome {
        reply: tlv,
        removed: Vec::new(),
    }
}

/// Handles a `/pairings` request from the verified controller `caller`.
pub fn handle(identity: &Identity, caller: &str, request: &Tlv) -> Outcome {
    if request.byte(kind::STATE) != Some(1) {
        return reply(error(2, TlvError::Unknown));
    }
    if !identity.pairing(caller).is_some_and(|p| p.admin) {
        return reply(error(2, TlvError::Authentication));
    }
    match request.byte(kind::METHOD) {
        Some(ADD) => reply(add(identity, request)),
        Some(REMOVE) => remove(identity, request),
        Some(LIST) => reply(list(identity)),
        _ => reply(error(2, TlvError::Unknown)),
    }
}

fn add(identity: &Identity, request: &Tlv) -> Tlv {
    let (Some(id), Some(key), Some(permissions)) = (
        request
            .get(kind::IDENTIFIER)
            .and_then(|id| String::from_utf8(id.to_vec()).ok()),
        request
            .get(kind::PUBLIC_KEY)
            .and_then(|k| <[u8; 32]>::try_from(k).ok()),
        request.byte(kind::PERMISSIONS),
    ) else {
        return error(2, TlvError::Unknown);
    };
    // A known controller may have its permissions changed, never its key.
    if identity.pairing(&id).is_some_and(|p| p.public_key != key) {
        return error(2, TlvError::Unknown);
    }
    // Nor may the last admin lose its rights: nobody could add or remove a pairing after it,
    // short of `hearth homekit reset`.
    let admin = permissions & 1 == 1;
    let others_admin = identity.pairings().iter().any(|p| p.admin && p.id != id);
    if !admin && identity.pairing(&id).is_some_and(|p| p.admin) && !others_admin {
        return error(2, TlvError::Unknown);
    }
    match identity.add_pairing(Pairing {
        id,
        public_key: key,
        admin,
    }) {
        Ok(()) => {
            log::info!("HomeKit: a controller added by an admin controller");
            Tlv::new().with(kind::STATE, &[2])
        }
        Err(IdentityError::Full) => error(2, TlvError::MaxPeers),
        Err(e) => {
            log::error!("HomeKit: a pairing could not be stored: {e}");
            error(2, TlvError::Unknown)
        }
    }
}

fn remove(identity: &Identity, request: &Tlv) -> Outcome {
    let Some(id) = request
        .get(kind::IDENTIFIER)
        .and_then(|id| String::from_utf8(id.to_vec()).ok())
    else {
        return reply(error(2, TlvError::Unknown));
    };
    let removed = match identity.remove_pairing(&id) {
        Ok(true) => vec![id],
        // Removing a controller that is not paired succeeds (HAP): the caller's aim holds.
        Ok(false) => Vec::new(),
        Err(e) => {
            log::error!("HomeKit: a pairing could not be removed: {e}");
            return reply(error(2, TlvError::Unknown));
        }
    };
    let mut removed = removed;
    let rest = identity.pairings();
    if !rest.is_empty() && !rest.iter().any(|p| p.admin) {
        for p in rest {
            match identity.remove_pairing(&p.id) {
                Ok(_) => removed.push(p.id),
                Err(e) => {
                    log::error!("HomeKit: a pairing could not be removed: {e}");
                    return Outcome {
                        reply: error(2, TlvError::Unknown),
                        removed,
                    };
                }
            }
        }
    }
    log::info!(
        "HomeKit: {} pairing(s) removed by an admin controller",
        removed.len()
    );
    Outcome {
        reply: Tlv::new().with(kind::STATE, &[2]),
        removed,
    }
}

fn list(identity: &Identity) -> Tlv {
    let mut tlv = Tlv::new().with(kind::STATE, &[2]);
    for (i, p) in identity.pairings().iter().enumerate() {
        if i > 0 {
            tlv.push(kind::SEPARATOR, &[]);
        }
        tlv.push(kind::IDENTIFIER, p.id.as_bytes());
        tlv.push(kind::PUBLIC_KEY, &p.public_key);
        tlv.push(kind::PERMISSIONS, &[u8::from(p.admin)]);
    }
    tlv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(name: &str) -> (Identity, std::path::PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("hearth-hap-pairings-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        (Identity::open(&dir).unwrap(), dir)
    }

    fn pairing(id: &str, admin: bool) -> Pairing {
        Pairing {
            id: id.into(),
            public_key: [1; 32],
            admin,
        }
    }

    fn request(method: u8) -> Tlv {
        Tlv::new()
            .with(kind::STATE, &[1])
            .with(kind::METHOD, &[method])
    }

    #[test]
    fn only_an_admin_may_change_pairings() {
        let (id, dir) = identity("admin");
        id.add_pairing(pairing("admin", true)).unwrap();
        id.add_pairing(pairing("user", false)).unwrap();
        let add = request(ADD)
            .with(kind::IDENTIFIER, b"new")
            .with(kind::PUBLIC_KEY, &[2; 32])
            .with(kind::PERMISSIONS, &[0]);
        let refused = handle(&id, "user", &add);
        assert_eq!(refused.reply, error(2, TlvError::Authentication));
        assert_eq!(id.pairings().len(), 2);
        let ok = handle(&id, "admin", &add);
        assert_eq!(ok.reply, Tlv::new().with(kind::STATE, &[2]));
        assert_eq!(id.pairing("new").map(|p| p.admin), Some(false));
        // The same id with another key is refused, unchanged.
        let other_key = request(ADD)
            .with(kind::IDENTIFIER, b"new")
            .with(kind::PUBLIC_KEY, &[3; 32])
            .with(kind::PERMISSIONS, &[1]);
        assert_eq!(
            handle(&id, "admin", &other_key).reply,
            error(2, TlvError::Unknown)
        );
        assert_eq!(id.pairing("new").map(|p| p.public_key), Some([2; 32]));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn list_separates_controllers() {
        let (id, dir) = identity("list");
        id.add_pairing(pairing("a", true)).unwrap();
        id.add_pairing(pairing("b", false)).unwrap();
        let listed = handle(&id, "a", &request(LIST)).reply;
        let kinds: Vec<u8> = listed.items().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                kind::STATE,
                kind::IDENTIFIER,
                kind::PUBLIC_KEY,
                kind::PERMISSIONS,
                kind::SEPARATOR,
                kind::IDENTIFIER,
                kind::PUBLIC_KEY,
                kind::PERMISSIONS
            ]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn removing_the_last_admin_removes_everyone() {
        let (id, dir) = identity("last");
        id.add_pairing(pairing("a", true)).unwrap();
        id.add_pairing(pairing("b", false)).unwrap();
        let out = handle(&id, "a", &request(REMOVE).with(kind::IDENTIFIER, b"a"));
        assert_eq!(out.reply, Tlv::new().with(kind::STATE, &[2]));
        assert_eq!(out.removed, ["a", "b"]);
        assert!(!id.is_paired());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn bad_requests_change_nothing() {
        let (id, dir) = identity("bad");
        id.add_pairing(pairing("a", true)).unwrap();
        for bad in [
            Tlv::new()
                .with(kind::STATE, &[2])
                .with(kind::METHOD, &[LIST]),
            request(9),
            request(ADD).with(kind::IDENTIFIER, b"x"),
            request(REMOVE),
        ] {
            let out = handle(&id, "a", &bad);
            assert_eq!(out.reply.byte(kind::ERROR), Some(TlvError::Unknown as u8));
        }
        assert_eq!(id.pairings(), vec![pairing("a", true)]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
