import { Module } from '@nestjs/common';
import { ConsoleAssets } from './console.assets';

/** The web console's bundle (`apps/console`, built into `dist/console`), served at `/console`. */
@Module({ providers: [ConsoleAssets] })
export class ConsoleAssetsModule {}
