/**
 * SQL Server's collation of ids and of the names compared with them: binary (case and accents
 * count, `'coder'` and `'Coder'` are two agents), and its order is the JS sort the lock order
 * assumes. The schema lint requires it of every identifier column (schema-lint.ts).
 */
export const ID_COLLATION = 'Latin1_General_100_BIN2';
