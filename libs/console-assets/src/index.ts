export * from './console-assets.module';
export * from './console.assets';
