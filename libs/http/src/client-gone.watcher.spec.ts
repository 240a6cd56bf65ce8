import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { whenClientGone, whenResponseCloses } from './client-gone.watcher';

/** A response that closes when the test says, finished or not. */
function response(): EventEmitter & { closed: boolean; destroyed: boolean; writableFinished: boolean } {
  return Object.assign(new EventEmitter(), { closed: false, destroyed: false, writableFinished: false });
}

const close = (res: ReturnType<typeof response>, finished: boolean) => {
  res.writableFinished = finished;
  res.closed = true;
  res.emit('close');
};

describe('whenClientGone', () => {
  it('fires once when the client leaves before the response was completely written', () => {
    const res = response();
    const gone = jest.fn();
    whenClientGone(res as unknown as ServerResponse, gone);
    expect(gone).not.toHaveBeenCalled();
    close(res, false);
    res.emit('close');
    expect(gone).toHaveBeenCalledTimes(1);
  });

  it('does not fire for a response that was completely written', () => {
    const res = response();
    const gone = jest.fn();
    whenClientGone(res as unknown as ServerResponse, gone);
    close(res, true);
    expect(gone).not.toHaveBeenCalled();
  });

  it('fires at once for a response whose client left already (a late registration still hears it)', () => {
    const res = response();
    close(res, false);
    const gone = jest.fn();
    whenClientGone(res as unknown as ServerResponse, gone);
    expect(gone).toHaveBeenCalledTimes(1);
    const destroyed = Object.assign(response(), { destroyed: true });
    whenClientGone(destroyed as unknown as ServerResponse, gone);
    expect(gone).toHaveBeenCalledTimes(2);
  });

  it('tells a response that closes whether it was finished, at once if it is closed already', () => {
    const seen: boolean[] = [];
    const finished = response();
    close(finished, true);
    whenResponseCloses(finished as unknown as ServerResponse, (gone) => seen.push(gone));
    const open = response();
    whenResponseCloses(open as unknown as ServerResponse, (gone) => seen.push(gone));
    close(open, false);
    expect(seen).toEqual([false, true]);
  });
});
