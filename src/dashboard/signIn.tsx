import type { FC } from 'hono/jsx';
import { Layout } from './layout.js';

/** The sign-in form: an API key, never echoed back; the CSRF token pairs with a pre-sign-in cookie. */
export const SignInPage: FC<{ csrf: string; error?: string }> = ({ csrf, error }) => (
  <Layout title="Sign in">
    <form class="signin" method="post" action="/dashboard/sign-in">
      <h1>Launch service</h1>
      {error && <div class="flash error">{error}</div>}
      <label for="key">API key</label>
      <input id="key" name="key" type="password" autocomplete="off" placeholder="sk_…" required />
      <input type="hidden" name="_csrf" value={csrf} />
      <button type="submit">Sign in</button>
      <p class="muted">An admin key sees every owner; any other key sees its own launches.</p>
    </form>
  </Layout>
);

/** A refusal or failure shown as a page. */
export const MessagePage: FC<{ title: string; message: string }> = ({ title, message }) => (
  <Layout title={title}>
    <h1>{title}</h1>
    <div class="flash error">{message}</div>
    <p>
      <a href="/dashboard">Back to the dashboard</a>
    </p>
  </Layout>
);
