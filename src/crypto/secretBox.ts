import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Encrypts and decrypts secrets at rest with AES-256-GCM under the service's SECRET_KEY. */
export interface SecretBox {
  seal(plaintext: string): string;
  open(sealed: string): string;
}

const VERSION = 'v1';

/** Sealed form: `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>`. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error('secret box key must be 32 bytes');
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== VERSION || !iv || !tag || body === undefined) throw new Error('sealed secret is malformed');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}

/**
 * The same box, remembering what it opened (up to `max` sealed values, the least recently used
 * forgotten first): the dispatcher signs every attempt with a launch's or endpoint's secret and
 * would otherwise decrypt it again each time. A value that fails to open is not remembered. The
 * plaintexts stay in this process's memory only, like the one being signed with.
 */
export function withOpenCache(box: SecretBox, max = 1024): SecretBox {
  const opened = new Map<string, string>();
  return {
    seal: (plaintext) => box.seal(plaintext),
    open(sealed) {
      let plain = opened.get(sealed);
      if (plain === undefined) {
        plain = box.open(sealed);
        if (opened.size >= max) opened.delete(opened.keys().next().value as string);
      } else {
        opened.delete(sealed);
      }
      opened.set(sealed, plain);
      return plain;
    },
  };
}
