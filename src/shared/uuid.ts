/**
 * UUIDs (RFC 9562) from bytes the caller chose: random and time bits (the publisher's version 7
 * event ids), or a hash (version 5 derived ids, version 8 ids derived from traces). The one place
 * that sets the version and variant bits and writes the text.
 */

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * The UUID of the 16 bytes of `bytes` from `at`, lower case, with its version nibble set to
 * `version` and the RFC 9562 variant (`10` in the top bits of byte 8); the other 122 bits are the
 * bytes' own.
 */
export function uuidOf(bytes: Uint8Array, version: number, at = 0): string {
  return (
    HEX[bytes[at]] +
    HEX[bytes[at + 1]] +
    HEX[bytes[at + 2]] +
    HEX[bytes[at + 3]] +
    '-' +
    HEX[bytes[at + 4]] +
    HEX[bytes[at + 5]] +
    '-' +
    HEX[(version << 4) | (bytes[at + 6] & 0x0f)] +
    HEX[bytes[at + 7]] +
    '-' +
    HEX[0x80 | (bytes[at + 8] & 0x3f)] +
    HEX[bytes[at + 9]] +
    '-' +
    HEX[bytes[at + 10]] +
    HEX[bytes[at + 11]] +
    HEX[bytes[at + 12]] +
    HEX[bytes[at + 13]] +
    HEX[bytes[at + 14]] +
    HEX[bytes[at + 15]]
  );
}
