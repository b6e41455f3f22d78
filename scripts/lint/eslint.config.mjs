// ESLint for gregor: typescript-eslint's strict type-checked rules on every TypeScript file, ESLint's
// recommended rules on the plain JavaScript ones. Run from the repository root: `npm run lint`.
// Formatting is Prettier's job (`npm run format:check`); no rule here is about layout.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import globals from 'globals';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'data/**',
      '**/node_modules/**',
      'compat/results/**',
      'test/fixtures/**',
      // generated from Kafka's message definitions; the generator (scripts/) is linted instead
      'protocol/generated/**',
    ],
  },
  {
    files: ['**/*.ts', '**/*.mts'],
    extends: [js.configs.recommended, ...tseslint.configs.strictTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: root },
    },
    rules: {
      // Offsets, sizes, ids and flags are printed everywhere in log lines and error messages; their
      // string forms are exact. Objects, nullish values and `any` stay forbidden in templates.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `(x) => void f(x)` and `() => resolve()` callbacks are the idiom for ignoring a value on purpose.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
      // With noUncheckedIndexedAccess every indexed read is `T | undefined`; inside a loop already
      // bounded by the length, `a[i]!` is the honest statement, and the alternatives are a cast or a
      // runtime check on the hot path. The tsconfig flags stay on, so unchecked reads elsewhere still fail.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // The same convention as tsc's noUnusedParameters: a leading underscore marks a parameter that an
      // interface or a caller's signature requires but this implementation does not need.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' }],
    },
  },
  {
    // These files drive clients that have no usable type declarations: the librdkafka binding is
    // loaded at run time from compat/clients/confluent (built by the test set-up, absent at build
    // time), and kafkajs's cluster/broker objects, used to fetch by partition, are not in its public
    // types. Values from them are `any` by necessity; everything else still applies.
    files: [
      'test/integration/**/*.ts',
      'test/helpers/eos.ts',
      'test/helpers/roundtrip.ts',
      'test/helpers/console.ts',
      'test/helpers/quotas.ts',
      'test/protocol/records/interop-kafkajs.test.ts',
      'compat/clients/**/*.ts',
      'compat/clients/**/*.mts',
      'compat/bench/**/*.ts',
    ],
    rules: {
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', '**/*.cjs'],
    extends: [js.configs.recommended],
    languageOptions: { globals: { ...globals.node } },
  },
  {
    // the web console's page (bundled for the browser by scripts/bundle.mjs)
    files: ['ui/**/*.js'],
    languageOptions: { globals: { ...globals.browser } },
  },
);
