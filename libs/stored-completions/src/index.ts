export * from './stored-completions.module';
export * from './stored-completions.service';
