import pymysql

def lambda_handler(event, context):
  return True