'use strict';
// Drives the ali-mns Node.js SDK with the gateway as its HTTP proxy (HTTP_PROXY): it then sends
// absolute-form request targets, `PUT http://<account>.mns.cn-hangzhou.aliyuncs.com/queues/q`,
// signed over the path. Needs HTTP_PROXY, ACCESS_KEY_ID, ACCESS_KEY_SECRET and NAME.

const assert = require('node:assert/strict');
const AliMNS = require('ali-mns');

const env = process.env;
const account = new AliMNS.Account('1234567890', env.ACCESS_KEY_ID, env.ACCESS_KEY_SECRET);
account.setGA(false); // never report usage anywhere
const region = new AliMNS.Region(AliMNS.City.Hangzhou);

async function main() {
  const mns = new AliMNS.MNS(account, region);
  await mns.createP(env.NAME, { VisibilityTimeout: 30 });
  const mq = new AliMNS.MQ(env.NAME, account, region);
  const sent = await mq.sendP('through a proxy');
  assert.ok(sent.Message.MessageId);
  const received = await mq.recvP(1);
  assert.equal(received.Message.MessageBody, 'through a proxy');
  await mq.deleteP(received.Message.ReceiptHandle);
  const attributes = await mq.getAttrsP();
  return { queue: attributes.Queue.QueueName, body: received.Message.MessageBody };
}

main()
  .then((result) => process.stdout.write(`${JSON.stringify(result)}\n`))
  .catch((err) => {
    process.stderr.write(`${JSON.stringify(err) || err}\n${(err && err.stack) || ''}\n`);
    process.exit(1);
  });
