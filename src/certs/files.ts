// Writes the serving files the way the kubelet updates a mounted Secret: the new files go into a
// fresh hidden folder, then one rename swaps the `..data` symlink to it, so tls.crt and tls.key
// change together and the reloader (which watches the folder) never reads a half-written pair.
import { access, mkdir, readFile, readlink, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CA_FILE, CERT_FILE, KEY_FILE } from './keypair.ts';

export interface ServingFiles {
  caCrt: string;
  tlsCrt: string;
  tlsKey: string;
}

const DATA_LINK = '..data';

/** Writes the files into `dir` unless they are already there; true when something changed. */
export async function writeServingFiles(dir: string, files: ServingFiles): Promise<boolean> {
  await mkdir(dir, { recursive: true });
  if (await sameAsOnDisk(dir, files)) return false;
  const version = `..${new Date().toISOString().replace(/[:.]/g, '_')}.${process.pid}.${Math.random().toString(36).slice(2, 8)}`;
  const versionDir = join(dir, version);
  await mkdir(versionDir, { mode: 0o755 });
  await writeFile(join(versionDir, KEY_FILE), files.tlsKey, { mode: 0o600 });
  await writeFile(join(versionDir, CERT_FILE), files.tlsCrt, { mode: 0o644 });
  await writeFile(join(versionDir, CA_FILE), files.caCrt, { mode: 0o644 });
  const previous = await readlink(join(dir, DATA_LINK)).catch(() => undefined);
  const tmpLink = join(dir, `${DATA_LINK}_tmp`);
  await rm(tmpLink, { force: true });
  await symlink(version, tmpLink);
  await rename(tmpLink, join(dir, DATA_LINK));
  for (const name of [KEY_FILE, CERT_FILE, CA_FILE]) {
    const target = join(DATA_LINK, name);
    if ((await readlink(join(dir, name)).catch(() => undefined)) === target) continue;
    // A plain file left by an earlier layout is replaced by the link, again by a rename.
    const tmp = join(dir, `.${name}.tmp`);
    await rm(tmp, { force: true });
    await symlink(target, tmp);
    await rename(tmp, join(dir, name));
  }
  if (previous && previous !== version) await rm(join(dir, previous), { recursive: true, force: true });
  return true;
}

/** Whether `dir` holds a serving pair already. */
export async function hasServingFiles(dir: string): Promise<boolean> {
  try {
    await Promise.all([CERT_FILE, KEY_FILE].map((f) => access(join(dir, f))));
    return true;
  } catch {
    return false;
  }
}

async function sameAsOnDisk(dir: string, files: ServingFiles): Promise<boolean> {
  try {
    const [ca, crt, key] = await Promise.all([CA_FILE, CERT_FILE, KEY_FILE].map((f) => readFile(join(dir, f), 'utf8')));
    return ca === files.caCrt && crt === files.tlsCrt && key === files.tlsKey;
  } catch {
    return false;
  }
}
