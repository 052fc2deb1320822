// The @alicloud/mns SDK's own test suite, test/client.test.js of github.com/aliyun/mns-nodejs-sdk
// at 5c861d5 (November 2025, the revision published to npm as @alicloud/mns 1.2.0), reproduced
// here because the npm package does not ship its tests. Copyright (c) 2017 Alibaba Cloud, MIT
// License. Reproduced as it is but for two changes, each marked "mns-push:":
//   - the SDK is required by its package name instead of '../';
//   - the two error cases fail when no error is thrown (upstream's pass without one);
// It addresses http://{ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com and
// http://accountid.mns.cn-shanghai.aliyuncs.com as upstream does, which
// tests/gateway/api/test_node_sdk_suites.py makes resolve to a gateway inside a private
// network namespace.
// Run by that test with mocha: ACCOUNT_ID, ACCESS_KEY_ID and ACCESS_KEY_SECRET in the environment.
'use strict';

const expect = require('expect.js');

const Client = require('@alicloud/mns'); // mns-push: upstream requires '../'

const ACCOUNT_ID = process.env.ACCOUNT_ID || 'accountid';
const ACCESS_KEY_ID = process.env.ACCESS_KEY_ID || 'accessKeyID';
const ACCESS_KEY_SECRET = process.env.ACCESS_KEY_SECRET || 'accessKeySecret';

describe('client test', function () {
  it('constructor', function () {
    expect(() => {
      new Client();
    }).to.throwException(/"accountid" must be passed in/);

    expect(() => {
      new Client('accountid');
    }).to.throwException(/must pass in "opts"/);

    expect(() => {
      new Client('accountid', {});
    }).to.throwException(/must pass in "opts.accessKeyID"/);

    expect(() => {
      new Client('accountid', {
        accessKeyID: 'accessKeyID'
      });
    }).to.throwException(/must pass in "opts.accessKeySecret"/);

    expect(() => {
      new Client('accountid', {
        accessKeyID: 'accessKeyID',
        accessKeySecret: 'accessKeySecret'
      });
    }).to.throwException(/must pass in "opts.region" when no custom endpoint is provided/);

    var client;
    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      region: 'cn-shanghai'
    });
    expect(client.endpoint).to.be('http://accountid.mns.cn-shanghai.aliyuncs.com');

    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      region: 'cn-shanghai',
      secure: true
    });
    expect(client.endpoint).to.be('https://accountid.mns.cn-shanghai.aliyuncs.com');

    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      region: 'cn-shanghai',
      secure: true,
      internal: true
    });
    expect(client.endpoint).to.be('https://accountid.mns.cn-shanghai-internal.aliyuncs.com');

    // Test custom endpoint with http://
    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      endpoint: 'http://custom.mns.example.com'
    });
    expect(client.endpoint).to.be('http://custom.mns.example.com');
    expect(client.endpointDomain).to.be('custom.mns.example.com');

    // Test custom endpoint with https://
    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      endpoint: 'https://secure.mns.example.com'
    });
    expect(client.endpoint).to.be('https://secure.mns.example.com');
    expect(client.endpointDomain).to.be('secure.mns.example.com');

    // Test custom endpoint with port
    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      endpoint: 'https://custom.mns.example.com:8080'
    });
    expect(client.endpoint).to.be('https://custom.mns.example.com:8080');
    expect(client.endpointDomain).to.be('custom.mns.example.com:8080');

    // Test that region is not required when custom endpoint is provided
    client = new Client('accountid', {
      accessKeyID: 'accessKeyID',
      accessKeySecret: 'accessKeySecret',
      endpoint: 'https://custom.mns.example.com'
      // No region specified - should not throw
    });
    expect(client.endpoint).to.be('https://custom.mns.example.com');

    // Test invalid endpoint without http/https prefix
    expect(() => {
      new Client('accountid', {
        accessKeyID: 'accessKeyID',
        accessKeySecret: 'accessKeySecret',
        endpoint: 'custom.mns.example.com'
      });
    }).to.throwException(/Custom endpoint must start with http:\/\/ or https:\/\//);

    // Test invalid endpoint with other protocols
    expect(() => {
      new Client('accountid', {
        accessKeyID: 'accessKeyID',
        accessKeySecret: 'accessKeySecret',
        endpoint: 'ftp://custom.mns.example.com'
      });
    }).to.throwException(/Custom endpoint must start with http:\/\/ or https:\/\//);
  });

  it('listQueue with invalid accessKeyID', async function() {
    var client = new Client('accountid', {
      accessKeyID: 'invalidAccessKeyID',
      accessKeySecret: 'invalidAccessKeySecret',
      region: 'cn-shanghai'
    });
    try {
      await client.listQueue();
      expect().fail('listQueue succeeded'); // mns-push: upstream passes without an error
    } catch (ex) {
      expect(ex.name).to.be('MNSInvalidAccessKeyIdError');
      expect(ex.message).to.match(/GET http:\/\/accountid\.mns\.cn-shanghai\.aliyuncs\.com\/queues failed with 403\. requestid: .{24}, hostid: http:\/\/accountid.mns.cn-shanghai.aliyuncs.com, message: The access Id you provided does not exist\./);
    }
  });

  it('listQueue with invalid accessKeySecret', function () {
    return (async function() {
      var client = new Client('accountid', {
        accessKeyID: ACCESS_KEY_ID,
        accessKeySecret: 'invalidAccessKeySecret',
        region: 'cn-shanghai'
      });
      try {
        await client.listQueue();
        expect().fail('listQueue succeeded'); // mns-push: upstream passes without an error
      } catch (ex) {
        expect(ex.name).to.be('MNSSignatureDoesNotMatchError');
        expect(ex.message).to.match(/GET http:\/\/accountid\.mns\.cn-shanghai\.aliyuncs\.com\/queues failed with 403\. requestid: .{24}, hostid: http:\/\/accountid.mns.cn-shanghai.aliyuncs.com, message: The request signature we calculated does not match the signature you provided\. Check your key and signing method\./);
      }
    })();
  });

  it('sign', function() {
    const client = new Client('ACCOUNT_ID', {
      accessKeyID: 'ACCESS_KEY_ID',
      accessKeySecret: 'ACCESS_KEY_SECRET',
      region: 'cn-shanghai'
    });
    var sign = client.sign('PUT', {
      'content-md5': '574683b3684e3cff610afa155cc2506d',
      'date': 'Tue, 11 Apr 2017 10:09:19 GMT',
      'content-type': 'text/xml',
      'x-mns-version': '2015-06-06'
    }, '/');
    expect(sign).to.be('A9zehggaYHHujmuRMxGIDrhWwx8=');
  });

  describe('API should ok', function () {
    const queueName = 'test-queue';
    const topicName = 'test-topic';

    const client = new Client(ACCOUNT_ID, {
      accessKeyID: ACCESS_KEY_ID,
      accessKeySecret: ACCESS_KEY_SECRET,
      region: 'cn-shanghai'
    });

    it('createQueue should ok', async function() {
      const response = await client.createQueue(queueName);
      expect(response).to.be.ok();
      expect(response.code >= 200 && response.code < 300).to.be.ok();
      expect(response.headers).to.have.property('location', `http://${ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com/queues/test-queue`);
    });

    it('getQueueAttributes should ok', async function() {
      const response = await client.getQueueAttributes(queueName);
      expect(response).to.be.ok();
      expect(response.code >= 200 && response.code < 300).to.be.ok();
      expect(response.body).to.have.property('QueueName', 'test-queue');
    });

    it('setQueueAttributes should ok', async function() {
      const response = await client.setQueueAttributes(queueName);
      expect(response).to.be.ok();
      expect(response.code).to.be(204);
    });

    it('listQueue should ok', async function() {
      const response = await client.listQueue();
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body.length).to.above(0);
      const testQueue = body.find(queue => queue.QueueName === 'test-queue');
      expect(testQueue).to.be.ok();
      expect(testQueue).to.have.property('QueueURL', `http://${ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com/queues/test-queue`);
    });

    it('sendMessage should ok', async function() {
      const response = await client.sendMessage(queueName, {
        MessageBody: 'just test it'
      });
      expect(response).to.be.ok();
      expect(response.code).to.be(201);
      const body = response.body;
      expect(body).to.have.property('MessageId');
      expect(body).to.have.property('MessageBodyMD5');
    });

    it('peekMessage should ok', async function() {
      const response = await client.peekMessage(queueName);
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body).to.have.property('MessageId');
      expect(body).to.have.property('MessageBodyMD5');
      expect(body).to.have.property('MessageBody');
      expect(body).to.have.property('EnqueueTime');
      expect(body).to.have.property('FirstDequeueTime');
      expect(body).to.have.property('DequeueCount');
      expect(body).to.have.property('Priority');
    });

    it('receiveMessage should ok', async function() {
      const response = await client.receiveMessage(queueName);
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body).to.have.property('MessageId');
      expect(body).to.have.property('MessageBodyMD5');
      expect(body).to.have.property('MessageBody');
      expect(body).to.have.property('ReceiptHandle');
      expect(body).to.have.property('EnqueueTime');
      expect(body).to.have.property('FirstDequeueTime');
      expect(body).to.have.property('NextVisibleTime');
      expect(body).to.have.property('DequeueCount');
      expect(body).to.have.property('Priority');
    });

    it('receiveMessage with waitSecond should ok', async function() {
      // send message first
      await client.sendMessage(queueName, {
        MessageBody: 'just test it'
      });
      const response = await client.receiveMessage(queueName, 10);
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body).to.have.property('MessageId');
      expect(body).to.have.property('MessageBodyMD5');
      expect(body).to.have.property('MessageBody');
      expect(body).to.have.property('ReceiptHandle');
      expect(body).to.have.property('EnqueueTime');
      expect(body).to.have.property('FirstDequeueTime');
      expect(body).to.have.property('NextVisibleTime');
      expect(body).to.have.property('DequeueCount');
      expect(body).to.have.property('Priority');
    });

    it('deleteMessage with waitSecond should ok', async function() {
      // send message first
      await client.sendMessage(queueName, {
        MessageBody: 'just test it'
      });
      // wait a bit for message to be available
      await new Promise(resolve => setTimeout(resolve, 1000));
      const response = await client.receiveMessage(queueName, 10);
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body).to.have.property('MessageId');
      expect(body).to.have.property('MessageBodyMD5');
      expect(body).to.have.property('MessageBody');
      expect(body).to.have.property('ReceiptHandle');
      expect(body).to.have.property('EnqueueTime');
      expect(body).to.have.property('FirstDequeueTime');
      expect(body).to.have.property('NextVisibleTime');
      expect(body).to.have.property('DequeueCount');
      expect(body).to.have.property('Priority');
      const res = await client.deleteMessage(queueName, body.ReceiptHandle);
      expect(res).to.be.ok();
      expect(res.code).to.be(204);
    });

    it('batchSendMessage should ok', async function() {
      var messages = [
        {
          MessageBody: 'just test it'
        },
        {
          MessageBody: 'just test it 2'
        }
      ];
      const response = await client.batchSendMessage(queueName, messages);
      expect(response).to.be.ok();
      expect(response.code).to.be(201);
      const body = response.body;
      expect(body.length).to.above(0);
      const [message] = body;
      expect(message).to.have.property('MessageId');
      expect(message).to.have.property('MessageBodyMD5');
    });

    it('batchDeleteMessage shoule ok', async function() {
      const recived = await client.batchReceiveMessage(queueName, 2);
      expect(recived).to.be.ok();
      expect(recived.code).to.be(200);
      const messageIds = recived.body.map((item) => {
        return item.ReceiptHandle;
      });
      const res = await client.batchDeleteMessage(queueName, messageIds);
      expect(res).to.be.ok();
      expect(res.code).to.be(204);
    });

    it('deleteQueue shoule ok', async function() {
      const res = await client.deleteQueue(queueName);
      expect(res).to.be.ok();
      expect(res.code).to.be(204);
    });

    it('createTopic should ok', async function() {
      const response = await client.createTopic(topicName);
      expect(response).to.be.ok();
      expect(response.code >= 200 && response.code < 300).to.be.ok();
      expect(response.headers).to.have.property('location', `http://${ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com/topics/test-topic`);
    });

    it('listTopic should ok', async function() {
      const response = await client.listTopic();
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const body = response.body;
      expect(body.length).to.above(0);
      const testTopic = body.find(topic => topic.TopicName === 'test-topic');
      expect(testTopic).to.be.ok();
      expect(testTopic).to.have.property('TopicURL', `http://${ACCOUNT_ID}.mns.cn-shanghai.aliyuncs.com/topics/test-topic`);
    });

    it('getTopicAttributes should ok', async function() {
      const response = await client.getTopicAttributes(topicName);
      expect(response).to.be.ok();
      expect(response.code).to.be(200);
      const topic = response.body;
      expect(topic).to.have.property('TopicName', topicName);
    });

    it('setTopicAttributes should ok', async function() {
      const response = await client.setTopicAttributes(topicName);
      expect(response).to.be.ok();
      expect(response.code).to.be(204);
    });

    it('publishMessage should ok', async function() {
      const response = await client.publishMessage(topicName, {
        MessageBody: 'test message'
      });
      expect(response).to.be.ok();
      expect(response.code).to.be(201);
      const message = response.body;
      expect(message).to.have.property('MessageId');
      expect(message).to.have.property('MessageBodyMD5');
    });
  });
});
