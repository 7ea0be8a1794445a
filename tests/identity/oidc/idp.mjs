// The OpenID provider the identity tests sign in against: npm's certified oidc-provider on 127.0.0.1.
//
//   PORT            the port to listen on (the issuer is http://127.0.0.1:PORT)
//   OIDC_USERS      {"alice": {"email": "...", "email_verified": true, "groups": ["engineering"]}}
//                   (any claim given here overrides the defaults, preferred_username included)
//   OIDC_USERS_FILE the same JSON in a file, read at every sign-in (a test changes a user's groups)
//   OIDC_CLIENTS    [{"client_id": "...", "client_secret": "...", "redirect_uris": ["..."]}]
//   OIDC_TAMPER     an attack on the ID token the token endpoint returns, re-signed after the change:
//                   audience (aud of another client), expired (exp an hour ago), foreign-key (signed by a
//                   key that is not in the JWKS, same kid), nonce (another nonce), none (unsigned,
//                   alg "none"), hmac (HS256 keyed with the client's secret). Empty: an honest provider.
//
// Its dev login page (/interaction/<uid>) accepts any login name; the password is ignored.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';
import * as jose from 'jose';

const port = Number(process.env.PORT);
const issuer = `http://127.0.0.1:${port}`;
const users = () => JSON.parse(process.env.OIDC_USERS_FILE
  ? readFileSync(process.env.OIDC_USERS_FILE, 'utf8') : (process.env.OIDC_USERS || '{}'));
const clients = JSON.parse(process.env.OIDC_CLIENTS || '[]');
const tamper = process.env.OIDC_TAMPER || '';

const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
const jwk = { ...(await jose.exportJWK(privateKey)), kid: 'k1', use: 'sig', alg: 'RS256' };

const provider = new Provider(issuer, {
  clients: clients.map((client) => ({
    grant_types: ['authorization_code'], response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_post', ...client,
  })),
  jwks: { keys: [jwk] },
  // Confidential clients too: the product must always send a PKCE challenge.
  pkce: { required: () => true },
  cookies: { keys: ['test-only-cookie-key'] },
  claims: {
    openid: ['sub'], email: ['email', 'email_verified'],
    profile: ['name', 'preferred_username'], groups: ['groups'],
  },
  scopes: ['openid', 'email', 'profile', 'groups'],
  findAccount: async (ctx, sub) => users()[sub] && {
    accountId: sub,
    claims: async () => ({ sub, preferred_username: sub, ...users()[sub] }),
  },
  features: { devInteractions: { enabled: true } },
});

// Rewrites the ID token after the provider made it: what a forger or a confused provider would send.
async function tampered(idToken) {
  const claims = jose.decodeJwt(idToken);
  if (tamper === 'none') return new jose.UnsecuredJWT(claims).encode();
  if (tamper === 'hmac') {
    const secret = new TextEncoder().encode(clients[0].client_secret);
    return new jose.SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).sign(secret);
  }
  let key = privateKey;
  if (tamper === 'audience') claims.aud = 'someone-else';
  if (tamper === 'expired') { claims.iat -= 7200; claims.exp = claims.iat + 60; }
  if (tamper === 'foreign-key') key = (await jose.generateKeyPair('RS256')).privateKey;
  if (tamper === 'nonce') claims.nonce = 'a-nonce-of-another-sign-in';
  return new jose.SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).sign(key);
}

if (tamper) {
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path !== '/token' || !ctx.body || !ctx.body.id_token) return;
    ctx.body = { ...ctx.body, id_token: await tampered(ctx.body.id_token) };
  });
}

provider.listen(port, '127.0.0.1', () => console.log(`oidc-provider listening on ${issuer}`));
