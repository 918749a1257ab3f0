// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

// The layers of src/ (docs/architecture.md): a file imports only its own layer and those below it. Each layer
// lists what it must not import (values and types alike, except where `typesFrom` allows types); product code
// never imports sim/, test/, bench/ or scripts/. src/workflows has its own rule below.
const outsideProduct = ['**/sim/**', '**/test/**', '**/bench/**', '**/scripts/**'];
const aboveBase = [
  '**/commands/**',
  '**/cli/**',
  '**/temporal/**',
  '**/activities/**',
  '**/workflows/**',
  '**/report/**',
];
const layers = [
  { files: 'src/cli/**/*.ts', banned: ['**/commands/**'] },
  { files: 'src/temporal/**/*.ts', banned: ['**/commands/**', '**/cli/**'] },
  {
    files: 'src/activities/**/*.ts',
    banned: ['**/commands/**', '**/cli/**', '**/temporal/**', '**/workflows/**', '**/report/**'],
  },
  // The report decrypts payloads with the codec (a leaf of src/temporal) and reads activity result types.
  {
    files: 'src/report/**/*.ts',
    banned: ['**/commands/**', '**/cli/**', '**/ssh/**', '**/temporal/*', '!**/temporal/codec.js'],
    typesFrom: ['**/activities/**'],
  },
  // The remote commands of the deploy and of plan/init: built from the spec, shared by activities and commands.
  {
    files: 'src/{host-commands,steps,plan,init}/**/*.ts',
    banned: ['**/commands/**', '**/cli/**', '**/temporal/**', '**/workflows/**', '**/report/**'],
    typesFrom: ['**/activities/**'],
  },
  { files: 'src/ssh/**/*.ts', banned: [...aboveBase, '**/config/**', '**/parsers/**'] },
  { files: 'src/{config,parsers,shared,preflight}/**/*.ts', banned: [...aboveBase, '**/ssh/**'] },
];
const layerMessage = 'Imports run down the layers (docs/architecture.md).';
const layerRules = layers.map(({ files, banned, typesFrom = [] }) => ({
  files: [files],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          { group: [...banned, ...outsideProduct], message: layerMessage },
          ...(typesFrom.length ? [{ group: typesFrom, message: layerMessage, allowTypeImports: true }] : []),
        ],
      },
    ],
  },
}));

export default tseslint.config(
  { ignores: ['node_modules/**', '.venv/**', '.liftoff/**', 'eslint.config.js', 'bin/**', 'dist/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // node:test's describe/it return promises the runner itself awaits.
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
    },
  },
  ...layerRules,
  {
    // Workflow code is replayed by Temporal and must stay deterministic: no Node builtins, no I/O.
    files: ['src/workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'Workflow code must be deterministic: Node builtins are not allowed in src/workflows.',
          })),
          patterns: [
            {
              group: ['../activities/*', '../ssh/*', '../temporal/*'],
              message: 'Workflows import activity types only via `import type`.',
              allowTypeImports: true,
            },
            {
              group: ['**/commands/**', '**/cli/**', '**/report/**', ...outsideProduct],
              message: layerMessage,
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        'process',
        'setImmediate',
        'require',
        '__dirname',
        '__filename',
        'Buffer',
      ],
    },
  },
  {
    // CommonJS files the SDK require()s by path (src/temporal/encoded-failure-converter.cjs): no types to check.
    files: ['**/*.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      sourceType: 'commonjs',
      globals: { require: 'readonly', exports: 'writable' },
    },
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
  },
);
