import { ApiProperty } from '@nestjs/swagger';

/** One model as `GET /admin/models` shows it. */
export class ModelStatus {
  @ApiProperty({ example: 'sim-chat' })
  id!: string;

  @ApiProperty({ enum: ['chat/compilations', 'images/generations'] })
  type!: string;

  @ApiProperty({ description: 'Live workers serving the model (registry heartbeats).', example: 2 })
  workers!: number;

  @ApiProperty({ description: 'Jobs the live workers run at once, summed over them.', example: 16 })
  concurrency!: number;

  @ApiProperty({ description: 'Declared `scaleToZero` in the catalog.' })
  scale_to_zero!: boolean;

  @ApiProperty({ type: Number, nullable: true, description: "The catalog's bound on waiting jobs." })
  max_queue_depth!: number | null;

  @ApiProperty({ description: 'Jobs waiting in the queue (queue depth).', example: 0 })
  waiting!: number;

  @ApiProperty({ description: 'Jobs a worker is running now (in flight).', example: 3 })
  active!: number;

  @ApiProperty({ description: 'Jobs scheduled for later (a backoff).', example: 0 })
  delayed!: number;

  @ApiProperty({ description: 'Age of the oldest waiting job, seconds (0 when none).', example: 0 })
  oldest_waiting_age_s!: number;

  @ApiProperty({ description: 'Jobs finished in the last 60 s (completed, failed or cancelled).' })
  finished_last_minute!: number;

  @ApiProperty({ description: 'Jobs failed in the last 60 s.' })
  failed_last_minute!: number;

  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'failed / finished over the last 60 s; null when nothing finished.',
    example: 0,
  })
  error_rate!: number | null;
}

export class ModelStatusList {
  @ApiProperty({ enum: ['list'] })
  object!: 'list';

  @ApiProperty({ description: 'When this was read, Unix milliseconds.' })
  read_at!: number;

  @ApiProperty({ type: [ModelStatus] })
  data!: ModelStatus[];
}
