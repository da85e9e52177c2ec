// ESLint (flat config): typescript-eslint's recommended rules, the TSDoc syntax check, and a
// disable comment that suppresses nothing is an error. `npm run lint` runs it with the
// dependency rules (.dependency-cruiser.cjs); CI runs both. Code outside test/ keeps a function
// budget: at most 100 lines (blank lines and comments left out) and 5 parameters a function.
import js from '@eslint/js';
import tsdoc from 'eslint-plugin-tsdoc';
import tseslint from 'typescript-eslint';
import globals from 'globals';

/**
 * Files holding functions over the budget, each with the functions concerned. The list only
 * shrinks: a file leaves it when its functions are back within the budget, and no file joins it.
 */
const overBudget = {};
const budgetRules = ['max-lines-per-function', 'max-params'];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', 'test-artifacts/**', 'data/**', 'clients/**'] },
  { linterOptions: { reportUnusedDisableDirectives: 'error' } },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    // doc comments of the package's code are TSDoc (what editors and API tools read)
    files: ['src/**/*.ts', 'migrations/**/*.ts'],
    plugins: { tsdoc },
    rules: { 'tsdoc/syntax': 'error' },
  },
  {
    files: ['**/*.ts'],
    rules: {
      // `_name`: a binding kept for its position (a destructured field left out, a callback's unused parameter)
      '@typescript-eslint/no-unused-vars': [
        'error',
        {
          argsIgnorePattern: '^_',
          varsIgnorePattern: '^_',
          destructuredArrayIgnorePattern: '^_',
          caughtErrors: 'none',
        },
      ],
      // control characters in patterns are the point where terminal and storage safety are checked
      'no-control-regex': 'off',
    },
  },
  {
    // CommonJS entry points and hooks: require() is how they load
    files: ['bin/**/*.js', 'scripts/**/*.js', 'test/**/*.js', '*.cjs', 'jest*.config.js'],
    languageOptions: { globals: globals.node, sourceType: 'commonjs' },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  { files: ['console/**/*.js'], languageOptions: { globals: globals.browser, sourceType: 'module' } },
  {
    // the function budget, outside test/: a jest `describe` callback holds all of its tests, so
    // tests are exempt from the line limit, and their fixture builders from the parameter limit
    files: ['**/*.{ts,js,mjs,cjs}'],
    ignores: ['test/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: true }],
      'max-params': ['error', 5],
    },
  },
  // a config block may not name zero files: the allowlist's block goes once the list is empty
  ...(Object.keys(overBudget).length > 0
    ? [{ files: Object.keys(overBudget), rules: Object.fromEntries(budgetRules.map((rule) => [rule, 'off'])) }]
    : []),
);
