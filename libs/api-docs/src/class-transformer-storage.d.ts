// class-transformer keeps its `@Type` metadata in this module, which its typings declare elsewhere.
declare module 'class-transformer/cjs/storage' {
  export { defaultMetadataStorage } from 'class-transformer/types/storage';
}
