/// The scripts behind the JS SDK's popup and redirect sign-in, served beside the handler (`/__/auth/…`,
/// `/emulator/auth/…`). They are protocol, not look, so they live here rather than in the templates.
enum WebSignInScripts {
    /// The handler's last page (`herald-event.js`): gives the SDK its event. A popup posts it to the helper iframe the
    /// opening page holds (same origin as this page, found by its `apiKey` and `appName`); a redirect keeps it in
    /// session storage, where the helper iframe finds it when the page loads again, and returns to the page.
    static let event = #"""
        (function () {
          'use strict';
          var data = JSON.parse(document.getElementById('herald-auth-event').textContent);
          var status = document.getElementById('status');
          function say(text) { status.textContent = text; }
          if (data.popup) {
            var sent = false;
            var opener = window.opener;
            for (var i = 0; opener && i < opener.frames.length; i++) {
              try {
                var frame = opener.frames[i];
                if (frame.location.origin !== location.origin) { continue; }
                var query = new URLSearchParams(frame.location.search);
                if (query.get('apiKey') + ':' + query.get('appName') !== data.storageKey) { continue; }
                frame.postMessage({
                  eventType: 'sendAuthEvent',
                  data: { authEvent: data.event, storageKey: data.storageKey, origin: data.origin }
                }, location.origin);
                sent = true;
              } catch (e) {
                // A frame of another origin: not the helper.
              }
            }
            say(sent ? 'Signed in: this window closes by itself.'
                     : 'The page that opened this sign-in is gone: start the sign-in again from the app.');
          } else {
            try {
              sessionStorage.setItem('firebase:redirectEvent:' + data.storageKey,
                                     JSON.stringify({ origin: data.origin, event: data.event }));
            } catch (e) {
              say('This browser keeps no session storage for this site, so the sign-in cannot return to the app.');
              return;
            }
            location.replace(data.redirectUrl);
          }
        })();
        """#

    /// The helper iframe's script (`herald-iframe.js`): it speaks to the page through gapi.iframes, as the SDK expects.
    /// It answers `webStorageSupport`, sends the page the event a redirect left (or `auth/no-auth-event`), and relays
    /// a popup's event. Only to its parent's origin: an authorized domain, and the one the flow was started from.
    /// Google's gapi loader by default; Herald's own (`herald-gapi.js`) when the page uses it.
    static let iframe = #"""
        (function () {
          'use strict';
          var config = JSON.parse(document.getElementById('herald-iframe').textContent);
          var query = new URLSearchParams(location.search);
          var storageKey = query.get('apiKey') + ':' + query.get('appName');
          var eventKey = 'firebase:redirectEvent:' + storageKey;
          var parentOrigin = '';
          if (location.ancestorOrigins && location.ancestorOrigins.length) {
            parentOrigin = location.ancestorOrigins[0];
          } else if (document.referrer) {
            parentOrigin = new URL(document.referrer).origin;
          }
          var parentHost = '';
          try { parentHost = new URL(parentOrigin).hostname.toLowerCase(); } catch (e) { parentHost = ''; }
          if (window.parent === window || config.hosts.indexOf(parentHost) < 0) {
            console.error('Herald: this helper frame serves the authorized domains only, not ' + (parentOrigin || 'this page'));
            return;
          }
          var parentContainer = null;
          var FILTER = null;

          function sendAuthEvent(authEvent) {
            parentContainer.send('authEvent', {
              type: 'authEvent',
              authEvent: authEvent || { type: 'unknown', error: { code: 'auth/no-auth-event' } }
            }, function (responses) {
              if (!responses || !responses.length || responses[responses.length - 1].status !== 'ACK') {
                console.error('Herald: the page did not take the sign-in event');
              }
            }, FILTER);
          }

          window.addEventListener('message', function (e) {
            if (e.origin !== location.origin || !e.data || e.data.eventType !== 'sendAuthEvent') { return; }
            var data = e.data.data || {};
            if (data.storageKey !== storageKey || data.origin !== parentOrigin) { return; }
            if (parentContainer) {
              sendAuthEvent(data.authEvent);
            } else {
              sessionStorage.setItem(eventKey, JSON.stringify({ origin: data.origin, event: data.authEvent }));
            }
          });

          function start() {
            FILTER = gapi.iframes.CROSS_ORIGIN_IFRAMES_FILTER;
            parentContainer = gapi.iframes.getContext().getParentIframe();
            parentContainer.register('webStorageSupport', function () {
              return { status: 'ACK', webStorageSupport: true };
            }, FILTER);
            var stored = null;
            try { stored = JSON.parse(sessionStorage.getItem(eventKey) || 'null'); } catch (e) { stored = null; }
            sessionStorage.removeItem(eventKey);
            sendAuthEvent(stored && stored.origin === parentOrigin ? stored.event : null);
          }

          window.gapi_onload = function () {
            gapi.load('gapi.iframes', {
              callback: start,
              timeout: 10000,
              ontimeout: function () { console.error('Herald: gapi.iframes did not load'); }
            });
          };
          var loader = document.createElement('script');
          loader.src = query.get('heraldGapi') ? 'herald-gapi.js' : 'https://apis.google.com/js/api.js';
          document.head.appendChild(loader);
        })();
        """#

    /// `herald-gapi.js`: the part of Google's gapi.iframes the JS SDK's popup and redirect use, for pages that do not
    /// load Google's script (no access to apis.google.com, a strict Content-Security-Policy). A page includes it
    /// before it signs in; the SDK then uses it, and the helper iframe speaks it too. Messages go only to the other
    /// side's origin, and come only from the other side's window.
    static let gapi = #"""
        (function () {
          'use strict';
          if (window.gapi && window.gapi.iframes && window.gapi.iframes.Iframe) { return; }
          var nextId = 1;

          // One side of the conversation: handlers by message type, callbacks by call id, calls held until their
          // type has a handler.
          function Channel(origin) {
            this.target = null;
            this.origin = origin;
            this.handlers = {};
            this.waiting = {};
            this.held = {};
          }
          Channel.prototype.register = function (type, handler) {
            this.handlers[type] = handler;
            var held = this.held[type] || [];
            delete this.held[type];
            for (var i = 0; i < held.length; i++) { this.receive(held[i]); }
          };
          Channel.prototype.send = function (type, data, callback) {
            var id = 'c' + (nextId++);
            if (callback) { this.waiting[id] = callback; }
            this.target.postMessage({ heraldGapi: 'call', id: id, type: type, data: data }, this.origin);
          };
          Channel.prototype.receive = function (message) {
            var self = this;
            if (message.heraldGapi === 'call') {
              var handler = this.handlers[message.type];
              if (!handler) {
                (this.held[message.type] = this.held[message.type] || []).push(message);
                return;
              }
              Promise.resolve().then(function () { return handler(message.data); }).then(function (result) {
                self.target.postMessage({ heraldGapi: 'reply', id: message.id, result: [result] }, self.origin);
              }, function () {
                self.target.postMessage({ heraldGapi: 'reply', id: message.id, result: [] }, self.origin);
              });
            } else if (message.heraldGapi === 'reply') {
              var callback = this.waiting[message.id];
              delete this.waiting[message.id];
              try {
                if (callback) { callback(message.result); }
              } catch (e) {
                // As with gapi: a callback's own error stays with it.
              }
            }
          };

          function Iframe(element, origin) {
            Channel.call(this, origin);
            var self = this;
            this.element = element;
            this.ready = new Promise(function (resolve) { self.becomeReady = resolve; });
          }
          Iframe.prototype = Object.create(Channel.prototype);
          Iframe.prototype.ping = function (callback) {
            return this.ready.then(function () { if (callback) { callback(); } return []; });
          };
          Iframe.prototype.restyle = function (style, callback) {
            if (callback) { callback(); }
            return Promise.resolve([]);
          };

          function Context() {}
          Context.prototype.open = function (options, callback) {
            var url = new URL(options.url, location.href);
            url.searchParams.set('heraldGapi', '1');
            var element = document.createElement('iframe');
            var attributes = options.attributes || {};
            Object.keys(attributes).forEach(function (name) {
              if (name === 'style') {
                Object.keys(attributes.style).forEach(function (key) { element.style[key] = attributes.style[key]; });
              } else {
                element.setAttribute(name, attributes[name]);
              }
            });
            var frame = new Iframe(element, url.origin);
            window.addEventListener('message', function (e) {
              if (e.source !== element.contentWindow || e.origin !== url.origin || !e.data || !e.data.heraldGapi) { return; }
              if (e.data.heraldGapi === 'ready') { frame.becomeReady(); } else { frame.receive(e.data); }
            });
            element.src = url.href;
            (options.where || document.body).appendChild(element);
            frame.target = element.contentWindow;
            return Promise.resolve(callback ? callback(frame) : frame);
          };
          Context.prototype.getParentIframe = function () {
            if (this.parentIframe) { return this.parentIframe; }
            var origin = location.ancestorOrigins && location.ancestorOrigins.length ? location.ancestorOrigins[0]
              : new URL(document.referrer).origin;
            var parent = new Channel(origin);
            parent.target = window.parent;
            window.addEventListener('message', function (e) {
              if (e.source !== window.parent || e.origin !== origin || !e.data || !e.data.heraldGapi) { return; }
              parent.receive(e.data);
            });
            window.parent.postMessage({ heraldGapi: 'ready' }, origin);
            this.parentIframe = parent;
            return parent;
          };

          var context = new Context();
          window.gapi = window.gapi || {};
          window.gapi.load = function (name, options) {
            var callback = typeof options === 'function' ? options : options && options.callback;
            if (callback) { setTimeout(callback, 0); }
          };
          window.gapi.iframes = {
            Iframe: Iframe,
            Context: Context,
            CROSS_ORIGIN_IFRAMES_FILTER: function () { return true; },
            getContext: function () { return context; }
          };
          if (typeof window.gapi_onload === 'function') { setTimeout(window.gapi_onload, 0); }
        })();
        """#
}
