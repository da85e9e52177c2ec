/**
 * Lua scripts kept as .lua files in `lua/` beside this module: in the sources, and in the build,
 * where `npm run build` copies them (package.json). A file includes a shared piece with a line
 * `--- @include "includes/<name>"` (BullMQ's notation), replaced by that file's text the first
 * time the script is used. A script runs by EVALSHA; a Redis that does not hold it yet (first use,
 * a restart, SCRIPT FLUSH, another cluster node) answers NOSCRIPT, and the script is then sent
 * once with EVAL, which also stores it there.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type IORedis from 'ioredis';

/** Where the .lua files are. */
export const LUA_DIR = path.join(__dirname, 'lua');

const INCLUDE = /^--- @include "([\w./-]+)"[ \t]*$/gm;

/** A script argument as ioredis sends it. */
export type ScriptArg = string | Buffer | number;

/** What a script needs of a connection: ioredis, one node or a cluster (BullMQ's client proxies it). */
export type ScriptClient = Pick<IORedis, 'evalsha' | 'eval' | 'callBuffer'>;

/** The text of `file` (under `dir`, `.lua` optional) with its includes expanded, each once per script. */
export function readLua(file: string, dir = LUA_DIR, included = new Set<string>()): string {
  const full = path.join(dir, file.endsWith('.lua') ? file : `${file}.lua`);
  let text: string;
  try {
    text = readFileSync(full, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new Error(
      `Lua script ${full} cannot be read (${code}): the sources keep it in src/dead-letters/lua, and npm run build copies it into dist`,
      { cause: err },
    );
  }
  return text.replace(INCLUDE, (_line, name: string) => {
    if (included.has(name)) return `-- (${name} is included above)`;
    included.add(name);
    return readLua(name, dir, included).trimEnd();
  });
}

function isNoScript(err: unknown): boolean {
  return err instanceof Error && err.message.startsWith('NOSCRIPT');
}

/** One script: read from its file on first use, then run by its SHA-1. */
export class LuaScript {
  private loaded: { source: string; sha: string } | undefined;

  constructor(
    readonly file: string,
    readonly numberOfKeys: number,
    private readonly dir = LUA_DIR,
  ) {}

  /** The script as Redis receives it (includes expanded). */
  get source(): string {
    return this.load().source;
  }

  get sha(): string {
    return this.load().sha;
  }

  private load(): { source: string; sha: string } {
    if (!this.loaded) {
      const source = readLua(this.file, this.dir);
      this.loaded = { source, sha: createHash('sha1').update(source).digest('hex') };
    }
    return this.loaded;
  }

  private argv(keys: readonly string[], args: readonly ScriptArg[]): ScriptArg[] {
    if (keys.length !== this.numberOfKeys)
      throw new RangeError(`${this.file}: ${keys.length} keys given, ${this.numberOfKeys} expected`);
    return [keys.length, ...keys, ...args];
  }

  /** Runs the script; Redis's reply as ioredis decodes it (strings, numbers, arrays). */
  async run(client: ScriptClient, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const argv = this.argv(keys, args) as [number, ...ScriptArg[]];
    try {
      return await client.evalsha(this.sha, ...argv);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return client.eval(this.source, ...argv);
    }
  }

  /** Runs the script; every string of the reply as the bytes Redis sent (nothing decoded). */
  async runBuffer(client: ScriptClient, keys: readonly string[], args: readonly ScriptArg[]): Promise<unknown> {
    const argv = this.argv(keys, args);
    try {
      return await client.callBuffer('EVALSHA', this.sha, ...argv);
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return client.callBuffer('EVAL', this.source, ...argv);
    }
  }
}
