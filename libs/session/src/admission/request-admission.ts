import type { ImageOrder, Principal } from '@mgw/access';
import { DEFAULT_TENANT_WEIGHT, type ModelEntry, type ModelKind } from '@mgw/contracts';
import type { Admission, AdmissionService, AdmittedFields } from './admission.service';
import type { AdmissionHold } from './admission-hold';

/** The session's port to admission: its key's limits, the holds on them, and a resumed stream's ticket. */
export type AdmissionPort = Pick<AdmissionService, 'admit' | 'admitFallback' | 'adopt'>;

/** The ticket a resumable stream's meta keeps, for the session that resumes it to adopt. */
export interface StreamTicket {
  keyId: string;
  /** The leased ticket's id, or null when the request holds no concurrency slot. */
  ticketId: string | null;
  /** The key's team when the ticket holds a slot of its team's concurrency too. */
  teamId?: string;
}

/**
 * One request's standing with its key's limits, across its attempts: the first admission takes the key's
 * limits (its hold is the request's own), a fallback's only its model's queue (its hold is the attempt's);
 * the request's end ends every hold. A resumed stream adopts the ticket its meta names instead.
 */
export class RequestAdmission {
  /** The request's first admission: its job's fields, the key's weight, its ticket. */
  private first: Admission | null = null;
  private adopted: StreamTicket | null = null;
  /** The current attempt's hold (a fallback's queue admission, or the first). */
  private current: AdmissionHold | null = null;
  private readonly holds: AdmissionHold[] = [];

  constructor(
    private readonly port: AdmissionPort,
    private readonly requestId: string,
  ) {}

  /** The request holds its key's limits already: any further admission is a fallback's. */
  get admitted(): boolean {
    return this.first !== null || this.adopted !== null;
  }

  /** The job fields the first admission settled (its key, its priority). */
  get fields(): AdmittedFields | null {
    return this.first?.fields ?? null;
  }

  /** The key's scheduling weight, for its jobs' place in the model's fair share. */
  get weight(): number {
    return this.first?.weight ?? DEFAULT_TENANT_WEIGHT;
  }

  /** What a resumable stream's meta keeps of it, for a resume to adopt. */
  get ticket(): StreamTicket {
    if (this.first === null) return this.adopted ?? { keyId: '', ticketId: null };
    const { ticket } = this.first;
    const leased = ticket.leased || ticket.teamLeased === true;
    const held: StreamTicket = { keyId: ticket.keyId, ticketId: leased ? ticket.id : null };
    if (ticket.teamLeased && ticket.teamId) held.teamId = ticket.teamId;
    return held;
  }

  /** Admits the request for `model`: against the key's limits the first time, else for the model's queue. */
  async admit(
    principal: Principal,
    kind: ModelKind,
    model: ModelEntry,
    tokenEstimate: number,
    images?: ImageOrder,
  ): Promise<Admission> {
    const first = !this.admitted;
    const admission = first
      ? await this.port.admit(principal, kind, model, this.requestId, tokenEstimate, images)
      : await this.port.admitFallback(principal, kind, model, this.requestId);
    this.holds.push(admission.hold);
    this.current = admission.hold;
    if (first) this.first = admission;
    return admission;
  }

  /** A resumed stream's: the ticket its meta names, whose concurrency slot this request keeps alive now. */
  adopt(ticket: StreamTicket, model: string): void {
    this.adopted = ticket;
    if (ticket.ticketId === null) return;
    const hold = this.port.adopt({
      id: ticket.ticketId,
      keyId: ticket.keyId,
      requestId: this.requestId,
      kind: 'chat',
      model,
      leased: true,
      ...(ticket.teamId === undefined ? {} : { teamId: ticket.teamId, teamLeased: true }),
    });
    this.holds.push(hold);
  }

  /** The attempt's job is queued. */
  enqueued(): void {
    this.current?.enqueued();
  }

  /** The attempt's job never was queued: what it took is given back. */
  rollback(): void {
    this.current?.rollback();
  }

  /** The request is over: every hold ends. */
  release(): void {
    for (const hold of this.holds) hold.release();
  }

  /** The stream goes on in another request, which keeps the concurrency slot alive from now on. */
  handOver(): void {
    for (const hold of this.holds) hold.handOver();
  }
}
