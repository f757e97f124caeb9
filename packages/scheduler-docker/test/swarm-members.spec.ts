import { OutputTail } from '../src';
import { endpointsOf, memberState, pairs, stateOf, taskView, type NodeView, type TaskView } from '../src/swarm/members';
import type { TaskInfo } from '../src/swarm/api';

function task(id: string, overrides: Partial<TaskView> = {}): TaskView {
  return { id, slot: 1, node: 'n1', state: 'running', desired: 'running', created: 0, port: 30001, err: '', exitCode: null, spec: 'd1', force: 0, ...overrides };
}

const nodes = new Map<string, NodeView>([
  ['n1', { address: '10.0.0.1', ready: true }],
  ['n2', { address: '10.0.0.2', ready: true }],
  ['down', { address: '10.0.0.3', ready: false }],
]);

describe('a task as the engine lists it', () => {
  it('reads its slot, node, states, host-published port, error, exit code and spec digest', () => {
    const info: TaskInfo = {
      ID: 't1',
      ServiceID: 's',
      Slot: 2,
      NodeID: 'n1',
      CreatedAt: '2026-01-01T00:00:00Z',
      DesiredState: 'running',
      Status: { State: 'failed', Err: 'task: non-zero exit (3)', ContainerStatus: { ExitCode: 3 }, PortStatus: { Ports: [{ PublishMode: 'host', PublishedPort: 30001, TargetPort: 5000 }] } },
      Spec: { ForceUpdate: 1, ContainerSpec: { Labels: { 'svc.spec': 'd1' } } },
    };
    expect(taskView(info)).toEqual({ id: 't1', slot: 2, node: 'n1', state: 'failed', desired: 'running', created: Date.parse('2026-01-01T00:00:00Z'), port: 30001, err: 'task: non-zero exit (3)', exitCode: 3, spec: 'd1', force: 1 });
  });

  it('maps task states to container states', () => {
    expect(stateOf(task('a'))).toBe('up');
    expect(stateOf(task('a', { state: 'starting' }))).toBe('created');
    expect(stateOf(task('a', { state: 'failed' }))).toBe('crashed');
    expect(stateOf(task('a', { state: 'rejected' }))).toBe('crashed');
    expect(stateOf(task('a', { state: 'shutdown' }))).toBe('down');
  });
});

describe('which task stands for which container', () => {
  const service = {
    digest: 'd1',
    members: new Map([
      ['b', { id: 'b', num: 2, digest: 'd1' }],
      ['a', { id: 'a', num: 1, digest: 'd1' }],
      ['old', { id: 'old', num: 1, digest: 'd0' }],
    ]),
    tasks: [task('t2', { slot: 2 }), task('t1', { slot: 1 }), task('gone', { slot: 1, desired: 'shutdown', state: 'shutdown' })],
  };

  it('pairs the members of the spec, by number, with the tasks Swarm wants running, by slot', () => {
    const paired = pairs(service);
    expect(paired.get('a')?.id).toBe('t1');
    expect(paired.get('b')?.id).toBe('t2');
    expect(paired.get('old')).toBeNull();
  });

  it('says a member of the spec without a task yet is created, one of an earlier spec down', () => {
    expect(memberState(service, 'a', null)).toBe('created');
    expect(memberState(service, 'old', null)).toBe('down');
    expect(memberState(service, 'a', task('t1', { state: 'starting' }))).toBe('created');
  });
});

describe('the endpoints of a process type', () => {
  const routed = (tasks: TaskView[]) => ({ port: 5000, tasks, lastLines: new OutputTail() });

  it('are the running tasks Swarm wants running on ready nodes, over every service of the type', () => {
    const old = routed([task('o1', { node: 'n1', port: 30001 })]);
    const fresh = routed([task('f1', { node: 'n2', port: 30002 }), task('f2', { node: 'down', port: 30003 }), task('f3', { state: 'starting', port: 30004 })]);
    expect(endpointsOf([old, fresh], nodes)).toEqual([
      { host: '10.0.0.1', port: 30001, id: 'task:o1' },
      { host: '10.0.0.2', port: 30002, id: 'task:f1' },
    ]);
  });

  it('leave out the tasks Swarm is stopping while another runs, and fall back on them when none does', () => {
    const leaving = routed([task('o1', { desired: 'shutdown', port: 30001 })]);
    const fresh = routed([task('f1', { node: 'n2', port: 30002 })]);
    expect(endpointsOf([leaving, fresh], nodes).map((e) => e.id)).toEqual(['task:f1']);
    expect(endpointsOf([leaving], nodes).map((e) => e.id)).toEqual(['task:o1']);
  });

  it('are none for a type that is not routed', () => {
    expect(endpointsOf([{ port: null, tasks: [task('w1')] }], nodes)).toEqual([]);
  });
});
