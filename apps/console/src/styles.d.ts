// esbuild bundles the stylesheet that main.tsx imports for its side effect; TypeScript checks that such an
// import resolves (noUncheckedSideEffectImports, on by default since TS 6), and this says what a .css is.
declare module '*.css';
