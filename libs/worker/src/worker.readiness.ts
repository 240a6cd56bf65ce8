import { Inject, Injectable } from '@nestjs/common';
import { WorkerConnections } from './worker-connections.service';

/** What /readyz answers: ready while the worker takes jobs and its connections are up. */
@Injectable()
export class WorkerReadiness {
  private serving = false;

  constructor(@Inject(WorkerConnections) private readonly connections: WorkerConnections) {}

  /** Taking jobs and registered. */
  serve(): void {
    this.serving = true;
  }

  /** Not ready from the moment the worker starts stopping. */
  stop(): void {
    this.serving = false;
  }

  get ready(): boolean {
    return this.serving && this.connections.allReady;
  }
}
