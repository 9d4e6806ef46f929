//! Provider routing, after OpenRouter's `provider` request object:
//! `order` (names tried first, in order; unknown names are skipped),
//! `only` (allow-list), `ignore` (deny-list) and `allow_fallbacks`
//! (default true).
//!
//! With fallbacks allowed, the providers not named in `order` follow in the
//! profile's default order, and an injected error on one attempt moves on to
//! the next candidate. With `allow_fallbacks: false`, only the providers in
//! `order` are tried (in order, as OpenRouter does), or, without `order`,
//! only the first provider of the default order.

use serde_json::Value;

/// A request's routing preferences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routing {
    /// `provider.order`.
    pub order: Option<Vec<String>>,
    /// `provider.only`.
    pub only: Option<Vec<String>>,
    /// `provider.ignore`.
    pub ignore: Vec<String>,
    /// `provider.allow_fallbacks`.
    pub allow_fallbacks: bool,
}

impl Default for Routing {
    fn default() -> Self {
        Routing {
            order: None,
            only: None,
            ignore: Vec::new(),
            allow_fallbacks: true,
        }
    }
}

fn names(v: &Value, key: &str) -> Result<Option<Vec<String>>, String> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("provider.{key} must be an array of provider names"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(format!("provider.{key} must be an array of provider names")),
    }
}

impl Routing {
    /// The routing preferences of a request body (its `provider` object);
    /// the message says what is malformed.
    pub fn from_request(req: &Value) -> Result<Routing, String> {
        let p = match req.get("provider") {
            None | Some(Value::Null) => return Ok(Routing::default()),
            Some(p @ Value::Object(_)) => p,
            Some(_) => return Err("provider must be an object".into()),
        };
        let allow_fallbacks = match p.get("allow_fallbacks") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err("provider.allow_fallbacks must be true or false".into()),
        };
        Ok(Routing {
            order: names(p, "order")?,
            only: names(p, "only")?,
            ignore: names(p, "ignore")?.unwrap_or_default(),
            allow_fallbacks,
        })
    }

    /// The providers to try, in order, as indexes into `providers`, given
    /// the profile's `default_order`; or why there is none. Every index in
    /// `default_order` must be below `providers.len()` (the emulator makes
    /// sure of it).
    pub fn candidates(
        &self,
        providers: &[&str],
        default_order: &[usize],
    ) -> Result<Vec<usize>, String> {
        let allowed = |i: usize| {
            let name = providers[i];
            self.only
                .as_ref()
                .is_none_or(|o| o.iter().any(|x| x == name))
                && !self.ignore.iter().any(|x| x == name)
        };
        let mut out: Vec<usize> = Vec::new();
        if let Some(order) = &self.order {
            for name in order {
                if let Some(i) = providers.iter().position(|p| p == name)
                    && allowed(i)
                    && !out.contains(&i)
                {
                    out.push(i);
                }
            }
            if self.allow_fallbacks {
                let rest: Vec<usize> = default_order
                    .iter()
                    .copied()
                    .filter(|&i| allowed(i) && !out.contains(&i))
                    .collect();
                out.extend(rest);
            }
        } else {
            out.extend(default_order.iter().copied().filter(|&i| allowed(i)));
            if !self.allow_fallbacks {
                out.truncate(1);
            }
        }
        if out.is_empty() {
            let why = if default_order.iter().all(|&i| !allowed(i)) {
                "provider.only and provider.ignore exclude every provider".to_string()
            } else {
                "provider.order names no available provider and provider.allow_fallbacks is false"
                    .to_string()
            };
            let known: Vec<&str> = default_order.iter().map(|&i| providers[i]).collect();
            return Err(format!(
                "no provider meets the routing requirements: {why} (providers: {})",
                known.join(", ")
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const P: [&str; 3] = ["quickstart", "steady", "bulk"];
    const ORDER: [usize; 3] = [0, 1, 2];

    fn route(provider: Value) -> Result<Vec<usize>, String> {
        Routing::from_request(&json!({ "provider": provider }))?.candidates(&P, &ORDER)
    }

    #[test]
    fn default_is_the_profile_order() {
        let r = Routing::from_request(&json!({})).expect("valid");
        assert_eq!(r.candidates(&P, &[2, 0, 1]), Ok(vec![2, 0, 1]));
    }

    #[test]
    fn order_first_then_the_rest() {
        assert_eq!(
            route(json!({"order": ["bulk", "nope", "steady"]})),
            Ok(vec![2, 1, 0])
        );
        assert_eq!(
            route(json!({"order": ["bulk", "steady"], "allow_fallbacks": false})),
            Ok(vec![2, 1])
        );
        assert_eq!(route(json!({"allow_fallbacks": false})), Ok(vec![0]));
    }

    #[test]
    fn only_and_ignore_filter() {
        assert_eq!(route(json!({"ignore": ["quickstart"]})), Ok(vec![1, 2]));
        assert_eq!(route(json!({"only": ["bulk", "steady"]})), Ok(vec![1, 2]));
        assert_eq!(
            route(json!({"order": ["quickstart"], "only": ["bulk"]})),
            Ok(vec![2])
        );
    }

    #[test]
    fn nothing_left_says_why() {
        let e = route(json!({"ignore": P})).expect_err("all ignored");
        assert!(
            e.contains("no provider meets the routing requirements"),
            "{e}"
        );
        assert!(e.contains("exclude every provider"), "{e}");
        let e = route(json!({"order": ["nope"], "allow_fallbacks": false})).expect_err("unknown");
        assert!(e.contains("allow_fallbacks is false"), "{e}");
    }

    #[test]
    fn malformed_requests_are_refused() {
        assert!(Routing::from_request(&json!({"provider": "bulk"})).is_err());
        assert!(Routing::from_request(&json!({"provider": {"order": "bulk"}})).is_err());
        assert!(Routing::from_request(&json!({"provider": {"order": [1]}})).is_err());
        assert!(Routing::from_request(&json!({"provider": {"allow_fallbacks": "no"}})).is_err());
    }
}
