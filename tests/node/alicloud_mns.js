'use strict';
// Drives the official Node.js SDK @alicloud/mns against the gateway, one scenario per run:
//   node alicloud_mns.js <scenario>
// with GATEWAY_URL, ACCESS_KEY_ID, ACCESS_KEY_SECRET, SECURITY_TOKEN (optional) and NAME (a
// fresh resource name) in the environment. It exits 0 when every assertion held, and prints
// what the gateway answered as one JSON line for the Python test to look at
// (tests/gateway/api/test_node_sdks.py).

const assert = require('node:assert/strict');
const MNSClient = require('@alicloud/mns');

const env = process.env;
const client = new MNSClient('1234567890', {
  endpoint: env.GATEWAY_URL,
  accessKeyId: env.ACCESS_KEY_ID,
  accessKeySecret: env.ACCESS_KEY_SECRET,
  securityToken: env.SECURITY_TOKEN || undefined,
});
const name = env.NAME;

async function failure(promise) {
  try {
    await promise;
  } catch (err) {
    return err.name; // "MNS" + Code + "Error"
  }
  assert.fail('expected an MNS error');
}

const scenarios = {
  async queues() {
    const created = await client.createQueue(name, { VisibilityTimeout: 40 });
    assert.equal(created.code, 201);
    assert.match(created.headers.location, new RegExp(`/queues/${name}$`));
    assert.equal((await client.createQueue(name, { VisibilityTimeout: 40 })).code, 204);
    assert.equal((await client.setQueueAttributes(name, { DelaySeconds: 2 })).code, 204);
    const attributes = (await client.getQueueAttributes(name)).body;
    assert.equal(attributes.QueueName, name);
    assert.equal(attributes.VisibilityTimeout, '40');
    assert.equal(attributes.DelaySeconds, '2');
    await client.createQueue(`${name}-b`);
    const listed = await client.listQueue(undefined, 10, name);
    const urls = [].concat(listed.body).map((queue) => queue.QueueURL);
    assert.equal(urls.length, 2);
    assert.equal((await client.deleteQueue(`${name}-b`)).code, 204);
    assert.equal((await client.deleteQueue(name)).code, 204);
    return { errors: await failure(client.getQueueAttributes(name)) };
  },

  async messages() {
    await client.createQueue(name);
    const sent = await client.sendMessage(name, { MessageBody: 'hello', Priority: 3 });
    assert.equal(sent.code, 201);
    assert.equal(sent.body.MessageBodyMD5, '5D41402ABC4B2A76B9719D911017C592');
    const peeked = await client.peekMessage(name);
    assert.equal(peeked.body.MessageBody, 'hello');
    const received = await client.receiveMessage(name, 1);
    assert.equal(received.body.MessageId, sent.body.MessageId);
    assert.equal(received.body.DequeueCount, '1');
    const changed = await client.changeMessageVisibility(name, received.body.ReceiptHandle, 30);
    assert.ok(changed.body.ReceiptHandle);
    assert.equal((await client.deleteMessage(name, changed.body.ReceiptHandle)).code, 204);
    return { empty: await failure(client.receiveMessage(name)) };
  },

  async batches() {
    await client.createQueue(name);
    const bodies = ['a', 'b', 'c'].map((body) => ({ MessageBody: body }));
    const sent = await client.batchSendMessage(name, bodies);
    assert.equal(sent.code, 201);
    assert.equal(sent.body.length, 3);
    const peeked = await client.batchPeekMessage(name, 3);
    assert.equal(peeked.body.length, 3);
    const received = await client.batchReceiveMessage(name, 3, 1);
    const handles = received.body.map((message) => message.ReceiptHandle);
    assert.deepEqual(received.body.map((m) => m.MessageBody).sort(), ['a', 'b', 'c']);
    const deleted = await client.batchDeleteMessage(name, handles);
    assert.equal(deleted.code, 204);
    const again = await client.batchDeleteMessage(name, handles);
    assert.equal(again.code, 404);
    return { refused: [].concat(again.body).map((error) => error.ErrorCode) };
  },

  async topics() {
    const created = await client.createTopic(name, { MaximumMessageSize: 2048 });
    assert.equal(created.code, 201);
    assert.equal((await client.setTopicAttributes(name, { LoggingEnabled: 'True' })).code, 204);
    const attributes = (await client.getTopicAttributes(name)).body;
    assert.equal(attributes.TopicName, name);
    assert.equal(attributes.MaximumMessageSize, '2048');
    assert.equal(attributes.LoggingEnabled, 'True');
    const listed = await client.listTopic(undefined, 10, name);
    assert.equal([].concat(listed.body).length, 1);
    const published = await client.publishMessage(name, { MessageBody: 'hi', MessageTag: 't' });
    assert.equal(published.code, 201);
    assert.equal(published.body.MessageBodyMD5, '49F68A5C8493EC2C0BF489821C21FC3B');
    return { empty: await failure(client.publishMessage(name, { MessageBody: '' })) };
  },

  async account() {
    // @alicloud/mns has no account operations; its signed GET of the topic list is the
    // connectivity check such clients do.
    const listed = await client.listTopic(undefined, 1, name);
    return { code: listed.code };
  },
};

scenarios[process.argv[2]]()
  .then((result) => {
    process.stdout.write(`${JSON.stringify(result || {})}\n`);
  })
  .catch((err) => {
    process.stderr.write(`${err.stack || err}\n`);
    process.exit(1);
  });
