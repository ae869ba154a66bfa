//! OAuth for `mcp.http` mounts (`auth.oauth`): rmcp's authorization manager does the
//! protocol (protected-resource metadata, then the authorization server's, the resource
//! indicator, the token request); seam gives it the mount's client and grant, and hands
//! the manager to the connection (`rmcp`'s `AuthClient`), which sends the token and
//! reacts to the server's challenges.
//!
//! `client_credentials` with a client secret is served. The grant has no refresh token,
//! so the token is exchanged again before it expires (`Renewing`), and kept in memory
//! only: a machine's credentials get a new one at every start. A login by a person
//! (`authorization_code`, `seam login`) and `private_key_jwt` are not built yet: such a
//! mount fails to connect and says so.

use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig, CredentialStore, StoredCredentials};

use crate::{Grant, OAuth};

/// Why a mount could not get a token.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    #[error("the client secret cannot be read: {0}")]
    Secret(String),
    #[error("{0}")]
    Protocol(String),
    #[error("{0} is not built yet: the mount cannot authorize")]
    NotBuilt(&'static str),
}

/// An authorization manager holding a token for the server at `url`, got as `oauth` says.
pub(crate) async fn authorize(url: &str, oauth: &OAuth) -> Result<AuthorizationManager, OAuthError> {
    let protocol = |e: rmcp::transport::auth::AuthError| OAuthError::Protocol(e.to_string());
    match oauth.grant {
        Grant::AuthorizationCode => Err(OAuthError::NotBuilt("a person's login (`grant: authorization_code`, `seam login`)")),
        Grant::ClientCredentials => {
            if oauth.private_key_file.is_some() {
                return Err(OAuthError::NotBuilt("`private_key_jwt` (`private_key_file`)"));
            }
            let client_id = oauth.client_id.clone().expect("resolve checked: client_credentials has a client id");
            let client_secret = secret(oauth)?;
            let config = ClientCredentialsConfig::ClientSecret {
                client_id,
                client_secret,
                scopes: oauth.scopes.clone(),
                resource: Some(url.to_owned()),
            };
            // One manager exchanges the credentials; the connection's reads its token
            // from the store that has the first exchange it when due.
            let mut exchanger = AuthorizationManager::new(url).await.map_err(protocol)?;
            let metadata = exchanger.resolve_metadata().await.map_err(protocol)?.metadata;
            exchanger.set_metadata(metadata.clone());
            exchanger.validate_client_credentials_metadata(&config).map_err(protocol)?;
            exchanger.configure_client_credentials(&config).map_err(protocol)?;
            let client_id = oauth.client_id.clone().unwrap_or_default();
            let store = Renewing { exchanger, config: config.clone(), client_id, current: tokio::sync::Mutex::new(None) };
            store.load().await.map_err(protocol)?;
            let mut manager = AuthorizationManager::new(url).await.map_err(protocol)?;
            manager.set_metadata(metadata);
            manager.configure_client_credentials(&config).map_err(protocol)?;
            manager.set_credential_store(store);
            Ok(manager)
        }
    }
}

/// The client's secret, from its variable or its file (surrounding whitespace dropped).
fn secret(oauth: &OAuth) -> Result<String, OAuthError> {
    let secret = match (&oauth.client_secret_env, &oauth.client_secret_file) {
        (Some(var), _) => std::env::var(&var.0).map_err(|_| OAuthError::Secret(format!("the variable `{}` is not set", var.0)))?,
        (None, Some(file)) => std::fs::read_to_string(file).map_err(|e| OAuthError::Secret(format!("{file}: {e}")))?,
        (None, None) => return Err(OAuthError::Secret("no `client_secret_env` or `client_secret_file` is given".to_owned())),
    };
    let secret = secret.trim();
    if secret.is_empty() {
        return Err(OAuthError::Secret("it is empty".to_owned()));
    }
    Ok(secret.to_owned())
}

/// `client_credentials`' token, exchanged again once it is within the time of its end
/// where rmcp's manager would try to refresh it (`due`), which this grant cannot.
struct Renewing {
    exchanger: AuthorizationManager,
    config: ClientCredentialsConfig,
    client_id: String,
    current: tokio::sync::Mutex<Option<StoredCredentials>>,
}

/// How long before a token's end rmcp's manager stops using it: `min(30 s, half its
/// life)`, at least a second. `Renewing` renews a second before that.
fn due(credentials: &StoredCredentials, now: u64) -> bool {
    use oauth2::TokenResponse as _;
    let Some(token) = &credentials.token_response else { return true };
    let (Some(life), Some(received)) = (token.expires_in(), credentials.token_received_at) else { return false };
    let remaining = life.as_secs().saturating_sub(now.saturating_sub(received));
    remaining <= (life.as_secs() / 2).clamp(1, 30) + 1
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs()
}

#[async_trait::async_trait]
impl CredentialStore for Renewing {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let mut current = self.current.lock().await;
        if current.as_ref().is_none_or(|c| due(c, now())) {
            let token = self.exchanger.exchange_client_credentials(&self.config).await?;
            *current = Some(StoredCredentials::new(self.client_id.clone(), Some(token), Vec::new(), Some(now())));
        }
        Ok(current.clone())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        *self.current.lock().await = Some(credentials);
        Ok(())
    }

    async fn clear(&self) -> Result<(), AuthError> {
        *self.current.lock().await = None;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(life: Option<u64>, received: u64) -> StoredCredentials {
        let mut response = rmcp::transport::auth::OAuthTokenResponse::new(
            oauth2::AccessToken::new("t".into()),
            oauth2::basic::BasicTokenType::Bearer,
            Default::default(),
        );
        response.set_expires_in(life.map(std::time::Duration::from_secs).as_ref());
        StoredCredentials::new("c".into(), Some(response), Vec::new(), Some(received))
    }

    /// A token is renewed a second before rmcp's manager would stop using it: with 30 s
    /// left of an hour's, or half of a short life left; one without a life never is.
    #[test]
    fn a_token_is_due_a_second_before_the_manager_gives_up_on_it() {
        let hour = token(Some(3600), 1000);
        assert!(!due(&hour, 1000 + 3600 - 32));
        assert!(due(&hour, 1000 + 3600 - 31));
        let short = token(Some(10), 1000);
        assert!(!due(&short, 1000 + 3));
        assert!(due(&short, 1000 + 4));
        assert!(!due(&token(None, 0), u64::MAX));
    }
}
